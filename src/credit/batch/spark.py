"""Apache Spark runner: the columnar underwriter, partition by partition.

Reads cases in the flat case schema (docs/batch.md) from Parquet, applies
:func:`credit.batch.decide_frame` to each Arrow record batch of each partition with
``DataFrame.mapInArrow``, and writes the decision columns to Parquet. The decisions are
the local batch's, row for row (``tests/test_spark.py`` checks it): Spark only splits
the input and gathers the output, and a partition holds whole cases.

The policy travels to the executors as its file's exact text and is loaded (validated,
hashed) there once per worker process, so every decision cites the same SHA-256 as a
local run.

    credit spark decide IN.parquet OUT.parquet [--master local[2]] [--policy FILE]
    spark-submit [options] .../credit/batch/spark.py IN.parquet OUT.parquet [--policy FILE]

Submitting to a cluster (the Python environment the executors need, the ``--archives``
recipe) is in docs/spark.md. pyspark is the optional ``spark`` extra.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from credit.batch.engine import decide_batches, decision_arrow_schema
from credit.errors import CreditError, InputError, MissingExtraError, PolicyError
from credit.policy import Policy, default_policy, load_policy

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "EXIT_BAD_INPUT",
    "PolicySource",
    "bad_rows",
    "decide_dataframe",
    "decide_parquet",
    "first_line",
    "is_bad_input",
    "main",
    "partition_decider",
    "report_bad_rows",
    "session",
    "spark_decision_schema",
]


EXIT_BAD_INPUT = 2


def is_bad_input(err: BaseException) -> bool:
    """Our input errors, and Spark's own analysis errors (a missing input path, an
    output that exists, a column missing or of the wrong type)."""
    if isinstance(err, CreditError):
        return True
    try:
        from pyspark.errors import AnalysisException
    except ImportError:  # pragma: no cover - pyspark is there if Spark raised
        return False
    return isinstance(err, AnalysisException)


def first_line(err: BaseException) -> str:
    """An error's message without Spark's JVM stack trace."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


@contextmanager
def _pandas_version_warning_silenced() -> Iterator[None]:
    """pyspark warns, when it starts a session and when it builds the pandas-UDF
    machinery ``mapInArrow`` runs on, that it does not fully support the installed
    pandas major version. No pandas object is made on this path (Arrow record batches
    in, Arrow record batches out), so that one warning is silenced here, and only here."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore",
            message=r"PySpark does not yet fully support pandas",
            category=FutureWarning,
        )
        yield


def _require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise MissingExtraError(
            "the Spark runner needs pyspark", extra="spark", package="pyspark"
        ) from None


@dataclass(frozen=True, slots=True)
class PolicySource:
    """A policy as its file's name and exact text: what an executor needs to load the
    very same policy (same bytes, same SHA-256), small enough to ship in a closure."""

    source: str
    text: str

    @classmethod
    def of(cls, policy: Policy) -> PolicySource:
        """Read the policy's file again; it must still be the bytes the policy was
        loaded from (same SHA-256), or the executors would decide under another."""
        try:
            text = Path(policy.source).read_text(encoding="utf-8")
        except OSError as err:
            raise PolicyError(f"cannot read: {err.strerror}", file=policy.source) from None
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != policy.sha256:
            raise PolicyError(
                f"the file changed since {policy.label} was loaded (sha256 {policy.sha256})",
                file=policy.source,
            )
        return cls(policy.source, text)

    def load(self) -> Policy:
        """The policy, loaded once per process (an executor's Python worker)."""
        policy = _LOADED.get(self)
        if policy is None:
            policy = _LOADED[self] = load_policy(self.source, self.text)
        return policy


_LOADED: dict[PolicySource, Policy] = {}


@dataclass(frozen=True, slots=True)
class _PartitionDecider:
    """What ``mapInArrow`` runs on each partition: Arrow record batches of case rows
    in, record batches of decision rows out (:func:`credit.batch.decide_batches`, one
    decision row per case, in order, in :func:`credit.batch.decision_arrow_schema`)."""

    policy: PolicySource
    schema: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # Spark's JVM reads only the Arrow types it declares (list, not large_list;
        # string, not large_string): each batch is cast to the declared schema.
        for batch in decide_batches(batches, self.policy.load()):
            yield batch.cast(self.schema)


def partition_decider(
    policy: Policy, schema: pa.Schema | None = None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The per-partition function for ``mapInArrow``: picklable, it carries the
    policy's text and the Arrow schema Spark declared for the output (default: the
    Arrow form of :func:`spark_decision_schema`), and refers to this module's code by
    name (the executors import ``credit``)."""
    if schema is None:
        from pyspark.sql.pandas.types import to_arrow_schema

        schema = to_arrow_schema(spark_decision_schema(policy))
    return _PartitionDecider(PolicySource.of(policy), schema)


def spark_decision_schema(policy: Policy) -> StructType:
    """The Spark schema of the decision rows (``decision_arrow_schema`` converted)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    schema: StructType = from_arrow_schema(decision_arrow_schema(policy))
    return schema


def decide_dataframe(cases: DataFrame, policy: Policy | None = None) -> DataFrame:
    """Decide a Spark DataFrame of cases in the flat case schema (docs/batch.md),
    lazily, like any Spark transformation: one decision row per case."""
    from pyspark.sql.pandas.types import to_arrow_schema

    policy = policy or default_policy()
    schema = spark_decision_schema(policy)
    func = partition_decider(policy, to_arrow_schema(schema))
    with _pandas_version_warning_silenced():
        return cases.mapInArrow(func, schema)


def decide_parquet(
    spark: SparkSession,
    source: str | Path,
    target: str | Path,
    policy: Policy | None = None,
    *,
    partitions: int | None = None,
    overwrite: bool = False,
) -> None:
    """Read cases from Parquet at ``source``, decide them, write the decisions to
    Parquet at ``target`` (a directory of part files, Spark's layout)."""
    cases = spark.read.parquet(str(source))
    if partitions is not None:
        cases = cases.repartition(partitions)
    decided = decide_dataframe(cases, policy)
    decided.write.mode("overwrite" if overwrite else "errorifexists").parquet(str(target))


def bad_rows(
    spark: SparkSession, source: str | Path, target: str | Path, *, shown: int = 20
) -> tuple[int, list[InputError]]:
    """The cases the underwriter could not decide (bad input), read back from the
    decisions written to ``target``: how many, and the first ``shown`` of them (by case
    id) as errors naming the input file, the case and the field. Every other case was
    decided: one bad row is one error, never the end of the run."""
    decided = spark.read.parquet(str(target))
    bad = decided.filter(decided["errorKind"].isNotNull())
    count = int(bad.count())
    rows = bad.select("caseId", "errorField", "error").orderBy("caseId").limit(shown).collect()
    errors = [
        InputError(
            str(row["error"]), case_id=row["caseId"], field=row["errorField"], source=str(source)
        )
        for row in rows
    ]
    return count, errors


def report_bad_rows(
    count: int, errors: Sequence[InputError], print_line: Callable[[str], None]
) -> None:
    """Name the bad rows, one line each (``print_line`` writes a line to stderr)."""
    if not count:
        return
    print_line(f"{count:,} row(s) not decided (bad input):")
    for err in errors:
        print_line(f"  {err}")
    if count > len(errors):
        print_line(f"  ... and {count - len(errors):,} more (errorKind is set on their rows)")


def session(
    master: str | None = None,
    app_name: str = "credit-decide",
    config: Mapping[str, str] | None = None,
) -> SparkSession:
    """A Spark session. With a ``local`` master the Python workers run this interpreter
    (``PYSPARK_PYTHON``) and Spark binds to 127.0.0.1 (``SPARK_LOCAL_IP``), each only
    where not already set; with no master, Spark's own configuration decides
    (``spark-submit --master ...``). ``config`` adds Spark settings
    (``{"spark.ui.enabled": "false"}``)."""
    _require_pyspark()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name).config("spark.ui.showConsoleProgress", "false")
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    if master is not None:
        builder = builder.master(master)
        if master.startswith("local"):
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            builder = builder.config("spark.driver.host", "127.0.0.1").config(
                "spark.driver.bindAddress", "127.0.0.1"
            )
    with _pandas_version_warning_silenced():
        return builder.getOrCreate()


def main(argv: Sequence[str] | None = None) -> int:
    """``spark-submit .../credit/batch/spark.py IN OUT`` (or ``python -m
    credit.batch.spark``): decide a Parquet file of cases; exit 0, or 2 on bad input
    (a bad row is named on stderr and every other row is still decided and written)."""
    parser = argparse.ArgumentParser(
        prog="credit.batch.spark", description="Decide Parquet cases on Apache Spark."
    )
    parser.add_argument("source", help="Parquet input: cases in the flat case schema")
    parser.add_argument("target", help="Parquet output directory: the decision columns")
    parser.add_argument("--master", default=None, help="Spark master (default: Spark's own)")
    parser.add_argument("--policy", type=Path, default=None, help="policy YAML file")
    parser.add_argument("--partitions", type=int, default=None, help="repartition the input")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")
    args = parser.parse_args(argv)
    try:
        policy = load_policy(args.policy) if args.policy else default_policy()
        spark = session(args.master)
    except CreditError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        decide_parquet(
            spark,
            args.source,
            args.target,
            policy,
            partitions=args.partitions,
            overwrite=args.overwrite,
        )
        count, errors = bad_rows(spark, args.source, args.target)
    except Exception as err:
        if not is_bad_input(err):
            raise
        print(f"error: {first_line(err)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        spark.stop()
    report_bad_rows(count, errors, lambda text: print(text, file=sys.stderr))
    return EXIT_BAD_INPUT if count else 0


if __name__ == "__main__":  # spark-submit runs this file as a script
    # Python put this package's folder first on sys.path, where its modules (engine,
    # schema, ...) could shadow top-level ones imported from here on (pyspark's too).
    _here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
    from credit.batch.spark import main as _main  # the importable module, not __main__

    raise SystemExit(_main())
