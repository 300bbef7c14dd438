"""What every algorithm runs on: devices, kernels, memory planner, host staging and scheduler.

Nothing here knows about astronomy; the method packages build on it.
"""
