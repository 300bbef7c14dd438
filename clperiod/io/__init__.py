"""Reading catalogs and light curves, writing results.

The public names live in ``clperiod.io.api``.
"""

from clperiod.io.api import (
    EXAMPLES,
    RV_EXAMPLES,
    CatalogReader,
    RVData,
    catalog_from_dataframe,
    catalog_from_table,
    example_path,
    load_example,
    load_rv_example,
    open_catalog,
    read_catalog,
    read_lightcurve_csv,
    read_rv,
    write_periodograms,
    write_results,
)

__all__ = [
    "EXAMPLES",
    "RV_EXAMPLES",
    "CatalogReader",
    "RVData",
    "catalog_from_dataframe",
    "catalog_from_table",
    "example_path",
    "load_example",
    "load_rv_example",
    "open_catalog",
    "read_catalog",
    "read_lightcurve_csv",
    "read_rv",
    "write_periodograms",
    "write_results",
]
