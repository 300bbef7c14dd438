"""What every algorithm runs on: devices, kernels, the memory planner, host staging and the scheduler.

Nothing here knows about astronomy; the method packages build on it.
"""
