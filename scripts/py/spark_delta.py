"""Local Spark session with Delta Lake, for interop tests.

    import spark_delta
    spark = spark_delta.session()          # local[2], Delta enabled, UI off, loopback only
    spark.read.format("delta").load(path)
    spark.stop()

Spark starts slowly (~10 s here): group all Spark checks of a test run into one process.

Spark comes from the pyspark wheel in .venv; the Delta jars come from Maven
(scripts/maven/delta-spark/pom.xml -> .it/spark-jars, see scripts/peers.sh spark)
and are passed as spark.jars, so nothing is resolved through Ivy at run time.
Jars whose artifact pyspark already ships (scala-library, jackson, parquet, hadoop
client, log4j, ...) are left out so only one version of each is on the classpath.
"""

import glob
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_VERSION_SUFFIX = re.compile(r"-\d[^/]*\.jar$")


def _artifact(jar):
    return _VERSION_SUFFIX.sub("", os.path.basename(jar))


def jars_dir():
    return os.environ.get("STREAMKIT_SPARK_JARS") or os.path.join(ROOT, ".it", "spark-jars")


def delta_jars():
    """Jars to add to Spark: the Maven-fetched Delta closure minus what pyspark ships."""
    import pyspark

    d = jars_dir()
    jars = sorted(glob.glob(os.path.join(d, "*.jar")))
    if not any(os.path.basename(j).startswith("delta-spark_") for j in jars):
        raise RuntimeError(f"no delta-spark jar in {d}; run scripts/peers.sh spark")
    spark_jars = os.path.join(os.path.dirname(os.path.abspath(pyspark.__file__)), "jars")
    shipped = {_artifact(j) for j in glob.glob(os.path.join(spark_jars, "*.jar"))}
    return [j for j in jars if _artifact(j) not in shipped]


def session(app_name="streamkit-it", warehouse=None, extra_conf=None):
    """Start (or get) a local[2] SparkSession with Delta Lake enabled."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers use the same venv
    from pyspark.sql import SparkSession

    if warehouse is None:
        warehouse = tempfile.mkdtemp(prefix="streamkit-spark-wh-")
    conf = {
        "spark.master": "local[2]",
        "spark.app.name": app_name,
        "spark.jars": ",".join(delta_jars()),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.memory": "1g",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.warehouse.dir": warehouse,
        "spark.sql.session.timeZone": "UTC",
        "spark.databricks.delta.snapshotPartitions": "2",
    }
    conf.update(extra_conf or {})
    b = SparkSession.builder
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
