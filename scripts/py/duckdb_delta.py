"""DuckDB with the delta extension loaded from the pinned pip wheel.

Usage (from a test, with scripts/py on sys.path or PYTHONPATH):

    import duckdb_delta
    con = duckdb_delta.connect()
    con.sql("SELECT count(*) FROM delta_scan('file:///abs/path/table')")

The extension is never downloaded at run time: autoinstall/autoload are off and
the .duckdb_extension file shipped by the duckdb-extension-delta wheel (same
version as duckdb, see scripts/requirements-peers.txt) is LOADed by path.
"""

import os

import duckdb


def extension_path():
    """Absolute path of delta.duckdb_extension for the installed duckdb version."""
    import duckdb_extension_delta

    base = os.path.join(os.path.dirname(os.path.abspath(duckdb_extension_delta.__file__)), "extensions")
    want = "v" + duckdb.__version__
    path = os.path.join(base, want, "delta.duckdb_extension")
    if not os.path.exists(path):
        have = sorted(os.listdir(base)) if os.path.isdir(base) else []
        raise RuntimeError(
            f"delta extension for duckdb {duckdb.__version__} not found at {path} "
            f"(wheel ships {have}); duckdb and duckdb-extension-delta must be pinned to the same version"
        )
    return path


def connect(database=":memory:", **kwargs):
    """Return a DuckDB connection with the delta extension loaded."""
    con = duckdb.connect(database, **kwargs)
    con.execute("SET autoinstall_known_extensions=false")
    con.execute("SET autoload_known_extensions=false")
    con.execute(f"LOAD '{extension_path()}'")
    return con


def table_uri(path):
    """file:// URI for a local Delta table directory, as delta_scan wants it."""
    return "file://" + os.path.abspath(path)
