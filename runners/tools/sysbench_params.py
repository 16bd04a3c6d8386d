"""sysbench's parameters: the allow-list (PARAMS, names are long options
with - -> _), its aliases, and the 0.4 option of each name that exists in
0.4; the tests either syntax runs. runners/tools/sysbench.py validates and
builds with them.
"""

from __future__ import annotations

from runners.params import Param

OLTP_TESTS = (
    "oltp_read_write",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_point_select",
    "oltp_insert",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_delete",
    "select_random_points",
    "select_random_ranges",
    "bulk_insert",
)
HOST_TESTS = ("cpu", "memory", "fileio", "threads", "mutex")
LEGACY_TESTS = ("oltp", "cpu", "memory", "fileio", "threads", "mutex")
VERSIONS = ("1", "1.0", "1.1", "0.4")

_INT = {"min": 0, "max": 10**12}
_POS = {"min": 1, "max": 10**12}
PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param("test", "text", "Test name, built-in or Lua script path (0.4: oltp, cpu, ...)"),
        Param("script", "sql", "Custom Lua script (uploaded as custom.lua)"),
        Param(
            "sysbench_version",
            "choice",
            "Command syntax: 1.x or legacy 0.4",
            choices=VERSIONS,
            default="1",
        ),
        Param("read_only", "bool", "Read-only OLTP (1.x: oltp_read_only; 0.4: --oltp-read-only)"),
        Param("tables", "int", "Number of tables", min=1, max=100_000),
        Param("table_size", "int", "Rows per table", **_INT),
        Param("threads", "int", "Worker threads", min=1, max=100_000),
        Param("time", "int", "Run time limit, seconds (0: none)", **_INT),
        Param("events", "int", "Event (transaction) limit (0: none)", **_INT),
        Param("rate", "int", "Target transactions per second (0: unlimited)", **_INT),
        Param("report_interval", "int", "Seconds between interval reports", min=0, max=86_400),
        Param("percentile", "float", "Latency percentile to report", min=1, max=100),
        Param("histogram", "bool", "Print a latency histogram"),
        Param("warmup_time", "int", "Seconds of warm-up excluded from statistics", **_INT),
        Param("forced_shutdown", "int", "Seconds after `time` before forced shutdown", **_POS),
        Param("db_ps_mode", "choice", "Prepared statements", choices=("auto", "disable")),
        Param("skip_trx", "bool", "Autocommit instead of explicit transactions"),
        Param("range_size", "int", "Rows per range SELECT", **_POS),
        Param("point_selects", "int", "Point SELECTs per transaction", **_INT),
        Param("simple_ranges", "int", "Simple range SELECTs per transaction", **_INT),
        Param("sum_ranges", "int", "SUM() range SELECTs per transaction", **_INT),
        Param("order_ranges", "int", "ORDER BY range SELECTs per transaction", **_INT),
        Param("distinct_ranges", "int", "DISTINCT range SELECTs per transaction", **_INT),
        Param("index_updates", "int", "Index UPDATEs per transaction", **_INT),
        Param("non_index_updates", "int", "Non-index UPDATEs per transaction", **_INT),
        Param("delete_inserts", "int", "DELETE/INSERT pairs per transaction", **_INT),
        Param("range_selects", "bool", "Enable range SELECTs"),
        Param("auto_inc", "bool", "AUTO_INCREMENT primary key"),
        Param("create_secondary", "bool", "Create the secondary index"),
        Param("secondary", "bool", "Secondary index instead of primary key"),
        Param("mysql_storage_engine", "text", "MySQL storage engine (0.4: --mysql-table-engine)"),
        Param(
            "mysql_ignore_errors",
            "text",
            "MySQL error codes to ignore, e.g. [1213, 1205], or all",
            many=True,
        ),
        Param(
            "rand_type",
            "choice",
            "Random distribution (0.4: --oltp-dist-type)",
            choices=("uniform", "gaussian", "special", "pareto"),
        ),
        Param("rand_seed", "int", "Random seed (0: time)", **_INT),
        Param(
            "oltp_test_mode",
            "choice",
            "0.4 only: OLTP mode",
            choices=("simple", "complex", "nontrx"),
        ),
        Param("cpu_max_prime", "int", "cpu: upper limit of primes", **_POS),
        Param("memory_block_size", "size", "memory: block size"),
        Param("memory_total_size", "size", "memory: total size"),
        Param("memory_oper", "choice", "memory: operation", choices=("read", "write", "none")),
        Param("memory_access_mode", "choice", "memory: access", choices=("seq", "rnd")),
        Param("file_num", "int", "fileio: number of files", **_POS),
        Param("file_total_size", "size", "fileio: total size"),
        Param("file_block_size", "int", "fileio: block size, bytes", **_POS),
        Param(
            "file_test_mode",
            "choice",
            "fileio: mode",
            choices=("seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw"),
        ),
        Param("file_io_mode", "choice", "fileio: I/O mode", choices=("sync", "async", "mmap")),
        Param(
            "file_extra_flags", "choice", "fileio: open flags", choices=("sync", "dsync", "direct")
        ),
        Param("file_fsync_freq", "int", "fileio: fsync every N requests (0: never)", **_INT),
        Param("file_rw_ratio", "float", "fileio: read/write ratio", min=0, max=1000),
    )
}
ALIASES = {
    "num_threads": "threads",
    "max_time": "time",
    "max_requests": "events",
    "oltp_table_size": "table_size",
    "oltp_read_only": "read_only",
    "oltp_skip_trx": "skip_trx",
    "oltp_range_size": "range_size",
    "oltp_point_selects": "point_selects",
    "oltp_simple_ranges": "simple_ranges",
    "oltp_sum_ranges": "sum_ranges",
    "oltp_order_ranges": "order_ranges",
    "oltp_distinct_ranges": "distinct_ranges",
    "mysql_table_engine": "mysql_storage_engine",
    "oltp_dist_type": "rand_type",
}
# 0.4 option per canonical name; names absent here do not exist in 0.4.
LEGACY_OPTIONS = {
    "threads": "num-threads",
    "time": "max-time",
    "events": "max-requests",
    "table_size": "oltp-table-size",
    "read_only": "oltp-read-only",
    "skip_trx": "oltp-skip-trx",
    "range_size": "oltp-range-size",
    "point_selects": "oltp-point-selects",
    "simple_ranges": "oltp-simple-ranges",
    "sum_ranges": "oltp-sum-ranges",
    "order_ranges": "oltp-order-ranges",
    "distinct_ranges": "oltp-distinct-ranges",
    "mysql_storage_engine": "mysql-table-engine",
    "rand_type": "oltp-dist-type",
    "oltp_test_mode": "oltp-test-mode",
    "percentile": "percentile",
    "report_interval": "report-interval",
    "forced_shutdown": "forced-shutdown",
    "cpu_max_prime": "cpu-max-prime",
    "memory_block_size": "memory-block-size",
    "memory_total_size": "memory-total-size",
    "memory_oper": "memory-oper",
    "memory_access_mode": "memory-access-mode",
    "file_num": "file-num",
    "file_total_size": "file-total-size",
    "file_block_size": "file-block-size",
    "file_test_mode": "file-test-mode",
    "file_io_mode": "file-io-mode",
    "file_extra_flags": "file-extra-flags",
    "file_fsync_freq": "file-fsync-freq",
    "file_rw_ratio": "file-rw-ratio",
}
