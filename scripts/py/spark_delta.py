"""Local Spark session with Delta Lake, for interop tests.

    import spark_delta
    spark = spark_delta.session()          # local[2], Delta enabled, UI off, loopback only
    spark.read.format("delta").load(path)
    spark.stop()

Spark starts slowly (~10 s here): group all Spark checks of a test run into one process.

session(s3=True) also reaches the test object store of scripts/s3.sh through s3a:// (use
s3a://bucket/path for s3://bucket/path): Hadoop's S3A (hadoop-aws of pyspark's Hadoop version
and the AWS SDK bundle, scripts/maven/hadoop-aws/pom.xml -> .it/spark-s3-jars) on the driver
classpath, configured from the AWS_* variables `scripts/s3.sh env` exports (endpoint,
path-style access, no TLS, static keys).

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


def s3_jars_dir():
    return os.environ.get("STREAMKIT_SPARK_S3_JARS") or os.path.join(ROOT, ".it", "spark-s3-jars")


def s3_conf():
    """Spark settings for s3a:// on the test object store, from the environment."""
    d = s3_jars_dir()
    jars = sorted(glob.glob(os.path.join(d, "*.jar")))
    if not any(os.path.basename(j).startswith("hadoop-aws-") for j in jars):
        raise RuntimeError(f"no hadoop-aws jar in {d}; run scripts/peers.sh spark")
    missing = [k for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY") if not os.environ.get(k)]
    if missing:
        raise RuntimeError("%s not set (eval \"$(scripts/s3.sh env)\")" % ", ".join(missing))
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    return {
        # The driver classpath, not spark.jars: local mode would copy the 640 MB SDK bundle
        # into every session's work directory.
        "spark.driver.extraClassPath": os.pathsep.join(jars),
        "spark.hadoop.fs.s3a.endpoint": endpoint,
        "spark.hadoop.fs.s3a.endpoint.region": os.environ.get("AWS_REGION") or "us-east-1",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": str(endpoint.startswith("https://")).lower(),
        "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "spark.hadoop.fs.s3a.access.key": os.environ["AWS_ACCESS_KEY_ID"],
        "spark.hadoop.fs.s3a.secret.key": os.environ["AWS_SECRET_ACCESS_KEY"],
    }


def session(app_name="streamkit-it", warehouse=None, extra_conf=None, s3=False):
    """Start (or get) a local[2] SparkSession with Delta Lake enabled (and s3a:// on the test
    object store when s3 is true)."""
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
    if s3:
        conf.update(s3_conf())
    conf.update(extra_conf or {})
    b = SparkSession.builder
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
