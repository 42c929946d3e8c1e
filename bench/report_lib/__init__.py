"""bench/report_lib: the modules of bench/report.py (the Markdown report and charts of a bench/run
document), one per part of the report; bench/README.md lists them."""
