"""DuckDB with the delta extension loaded from the pinned pip wheel.

Usage (from a test, with scripts/py on sys.path or PYTHONPATH):

    import duckdb_delta
    con = duckdb_delta.connect()
    con.sql("SELECT count(*) FROM delta_scan('file:///abs/path/table')")

The extension is never downloaded at run time: autoinstall/autoload are off and
the .duckdb_extension file shipped by the duckdb-extension-delta wheel (same
version as duckdb, see scripts/requirements-peers.txt) is LOADed by path; likewise
httpfs (duckdb-extension-httpfs, for s3://) with connect(httpfs=True).
"""

import os

import duckdb


def _wheel_extension(module, name):
    """Absolute path of NAME.duckdb_extension shipped by the wheel MODULE for the installed
    duckdb version."""
    import importlib

    mod = importlib.import_module(module)
    base = os.path.join(os.path.dirname(os.path.abspath(mod.__file__)), "extensions")
    want = "v" + duckdb.__version__
    path = os.path.join(base, want, name + ".duckdb_extension")
    if not os.path.exists(path):
        have = sorted(os.listdir(base)) if os.path.isdir(base) else []
        wheel = module.replace("_", "-")
        raise RuntimeError(
            f"{name} extension for duckdb {duckdb.__version__} not found at {path} "
            f"(wheel ships {have}); duckdb and {wheel} must be pinned to the same version"
        )
    return path


def extension_path():
    """Absolute path of delta.duckdb_extension for the installed duckdb version."""
    return _wheel_extension("duckdb_extension_delta", "delta")


def httpfs_path():
    """Absolute path of httpfs.duckdb_extension (s3:// and http(s):// reads, S3 secrets) from
    the duckdb-extension-httpfs wheel, for the installed duckdb version."""
    return _wheel_extension("duckdb_extension_httpfs", "httpfs")


def connect(database=":memory:", httpfs=False, **kwargs):
    """Return a DuckDB connection with the delta extension loaded, and httpfs too when httpfs
    is true."""
    con = duckdb.connect(database, **kwargs)
    con.execute("SET autoinstall_known_extensions=false")
    con.execute("SET autoload_known_extensions=false")
    con.execute(f"LOAD '{extension_path()}'")
    if httpfs:
        con.execute(f"LOAD '{httpfs_path()}'")
    return con


def table_uri(path):
    """file:// URI for a local Delta table directory, as delta_scan wants it."""
    return "file://" + os.path.abspath(path)
