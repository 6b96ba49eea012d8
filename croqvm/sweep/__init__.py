"""Sweeps of one kernel over many problem shapes and schedules, serial or on a Dask cluster."""
