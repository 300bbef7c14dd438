"""Independent pure NumPy/Python reference implementations used by the test suite."""
