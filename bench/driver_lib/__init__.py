"""bench/driver_lib: the modules of bench/driver.py (the samples of a bench/run), one per concern;
bench/README.md lists them."""
