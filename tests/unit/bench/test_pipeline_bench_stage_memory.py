"""The pipeline benchmark's peak memory per stage: the job's own progress lines mark the stages, the samples fall
into the stage that was running."""

import contextlib
import io

from bench_modules import bench_module

from headroom_pipeline.job import Progress


def progress_lines(*stages):
    """What the job writes on stderr as these stages start and end."""
    written = io.StringIO()
    progress = Progress(enabled=True, total=len(stages))
    with contextlib.redirect_stderr(written):
        for name in stages:
            with progress.stage(name):
                pass
    return written.getvalue().splitlines()


def test_the_stage_starts_are_read_from_the_jobs_progress_lines():
    bench = bench_module("pipeline_bench")
    lines = progress_lines("start Spark", "read snapshots", "forecast volumes")
    started = [match["stage"] for match in map(bench.STAGE_STARTED.search, lines) if match]
    assert started == ["start Spark", "read snapshots", "forecast volumes"]


def test_each_sample_counts_for_the_stage_that_was_running():
    bench = bench_module("pipeline_bench")
    starts = [("start Spark", 0.0), ("read", 2.0), ("short", 5.0), ("forecast", 5.1)]
    samples = [(0.5, 100 * 1024), (1.9, 300 * 1024), (2.5, 900 * 1024), (4.9, 700 * 1024), (5.25, 500 * 1024)]
    samples += [(6.0, 800 * 1024)]
    peaks = bench.stage_peaks(starts, samples, end=7.0)
    # a stage shorter than the sampling takes the first sample after it started
    assert peaks == {"start Spark": 300.0, "read": 900.0, "short": 500.0, "forecast": 800.0}


def test_a_stage_with_no_sample_after_it_started_has_no_peak():
    bench = bench_module("pipeline_bench")
    assert bench.stage_peaks([("read", 0.0), ("write", 3.0)], [(1.0, 2048)], end=3.1) == {"read": 2.0}
