"""Resumable catalog runs in chunks, writing results as they go.

The public names live in ``clperiod.pipeline.run``.
"""

from clperiod.pipeline.run import (
    ALGORITHMS,
    AutoGrid,
    CatalogRun,
    GridResolutionWarning,
    PeriodSearch,
    catalog_extent,
    default_plot_labels,
    run_catalog,
    work_directory,
)

__all__ = [
    "ALGORITHMS",
    "AutoGrid",
    "CatalogRun",
    "GridResolutionWarning",
    "PeriodSearch",
    "catalog_extent",
    "default_plot_labels",
    "run_catalog",
    "work_directory",
]
