"""publication: a run's outputs are written into a generation of their own and published at once by one rename."""

import os

import pytest

from headroom_pipeline import publication
from headroom_pipeline.config import ConfigError


def written_run(out, content, names=("decisions", "summary.json"), not_written=(), earlier_layout=()):
    """A run that wrote ``content`` into each of ``names`` (a directory holding part-0, or the summary file)."""
    generation = publication.begin(str(out))
    for name in names:
        write(generation.output(name), content)
    publication.publish(generation, [*not_written, *names], earlier_layout)
    return generation


def write(path, content):
    if path.endswith(".json"):
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(content)
        return
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "part-0"), "w", encoding="utf-8") as handle:
        handle.write(content)


def read(out, name):
    path = os.path.join(str(out), name)
    with open(path if name.endswith(".json") else os.path.join(path, "part-0"), encoding="utf-8") as handle:
        return handle.read()


def test_every_output_is_a_symlink_through_current_and_one_rename_switches_them_all(tmp_path):
    written_run(tmp_path, "first")
    assert os.readlink(tmp_path / "current") == ".generations/000001"
    assert os.readlink(tmp_path / "decisions") == "current/decisions"
    assert os.readlink(tmp_path / "summary.json") == "current/summary.json"
    assert (read(tmp_path, "decisions"), read(tmp_path, "summary.json")) == ("first", "first")

    generation = publication.begin(str(tmp_path))
    for name in ("decisions", "summary.json"):
        write(generation.output(name), "second")
    # Written but not published: a reader still finds the first run's outputs, every one of them.
    assert (read(tmp_path, "decisions"), read(tmp_path, "summary.json")) == ("first", "first")
    publication.publish(generation, ["decisions", "summary.json"])
    assert (read(tmp_path, "decisions"), read(tmp_path, "summary.json")) == ("second", "second")


def test_a_reader_that_resolved_current_before_the_switch_reads_the_run_before_to_the_end(tmp_path):
    written_run(tmp_path, "first")
    resolved = os.path.realpath(tmp_path / "current")
    written_run(tmp_path, "second")
    assert read(resolved, "decisions") == "first", "the replaced generation stays until the next run begins"
    written_run(tmp_path, "third")
    assert not os.path.exists(resolved)
    assert sorted(os.listdir(tmp_path / ".generations")) == ["000002", "000003"], "never more than two between runs"


def test_a_run_that_did_not_finish_leaves_the_outputs_as_they_were_and_the_next_run_removes_its_work(tmp_path):
    written_run(tmp_path, "first")
    unfinished = publication.begin(str(tmp_path))
    write(unfinished.output("decisions"), "half")  # killed here, before publish
    assert read(tmp_path, "decisions") == "first"

    generation = publication.begin(str(tmp_path))
    assert not os.path.exists(unfinished.path)
    assert generation.number == unfinished.number + 1
    assert sorted(os.listdir(tmp_path / ".generations")) == ["000001", generation.name]


def test_an_output_this_run_did_not_write_disappears_with_the_switch_and_a_users_symlink_stays(tmp_path):
    written_run(tmp_path, "first", names=("decisions", "topics", "summary.json"))
    os.symlink("elsewhere", tmp_path / "clients")
    written_run(tmp_path, "second", names=("decisions", "summary.json"), not_written=("topics", "clients"))
    assert not os.path.lexists(tmp_path / "topics")
    assert os.readlink(tmp_path / "clients") == "elsewhere"
    os.remove(tmp_path / "clients")
    assert sorted(name for name in os.listdir(tmp_path) if not name.startswith(".")) == [
        "current",
        "decisions",
        "summary.json",
    ]


def test_outputs_of_the_earlier_layout_are_replaced_and_other_files_left_alone(tmp_path):
    for name in ("decisions", "topics", "clients"):
        write(str(tmp_path / name), "earlier")
    write(str(tmp_path / "summary.json"), "earlier")
    write(str(tmp_path / "notes"), "the user's")
    publication.check(str(tmp_path), ["decisions", "summary.json"], {"decisions", "summary.json", "topics"})
    written_run(tmp_path, "new", not_written=("topics", "clients"), earlier_layout=("decisions", "topics"))
    assert (read(tmp_path, "decisions"), read(tmp_path, "summary.json")) == ("new", "new")
    assert os.path.islink(tmp_path / "decisions") and os.path.islink(tmp_path / "summary.json")
    assert not os.path.exists(tmp_path / "topics"), "written by the earlier run (its summary says so)"
    assert read(tmp_path, "clients") == "earlier", "not known to be the job's"
    assert read(tmp_path, "notes") == "the user's"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda path: path.mkdir(), r"current' is not the job's: .*\.generations/NUMBER; move it"),
        (lambda path: os.symlink("/elsewhere", path), r"current' is not the job's"),
    ],
)
def test_a_current_that_is_not_the_jobs_symlink_is_refused_before_anything_is_written(tmp_path, make, message):
    make(tmp_path / "current")
    with pytest.raises(ConfigError, match="--out: .*" + message):
        publication.check(str(tmp_path), ["summary.json"], set())
    assert sorted(os.listdir(tmp_path)) == ["current"]


def test_an_output_name_the_job_did_not_write_is_refused_before_anything_is_written(tmp_path):
    write(str(tmp_path / "report"), "the user's notes")
    with pytest.raises(
        ConfigError, match=r"--out: .*report' is not the job's \(no summary.json .*\), and the run would"
    ):
        publication.check(str(tmp_path), ["report", "summary.json"], set())
    os.symlink("../archive", tmp_path / "decisions")
    with pytest.raises(ConfigError, match=r"--out: .*decisions' is a symlink the job did not make"):
        publication.check(str(tmp_path), ["decisions", "summary.json"], set())
    publication.check(str(tmp_path), ["summary.json"], set())  # neither written by this run: left alone


def test_a_second_run_on_the_same_out_is_refused_while_the_first_holds_the_lock(tmp_path):
    with publication.locked(str(tmp_path)):
        with pytest.raises(ConfigError, match=r"--out: another run is writing .* \(it holds .generations/lock\)"):
            with publication.locked(str(tmp_path)):
                pass
    with publication.locked(str(tmp_path)):
        pass


def test_a_generation_that_cannot_be_removed_yet_is_said_and_left_for_the_next_run(tmp_path, monkeypatch):
    written_run(tmp_path, "first")
    written_run(tmp_path, "second")

    def busy(path):
        raise OSError(16, "Device or resource busy")

    monkeypatch.setattr(publication.shutil, "rmtree", busy)
    generation = publication.begin(str(tmp_path))
    assert generation.name == "000003"
    assert generation.warnings == [
        "--out: cannot remove the earlier generation 000001 yet (Device or resource busy; a reader may hold it open): "
        "the next run tries again"
    ]


def test_the_numbers_go_on_past_six_digits(tmp_path):
    os.makedirs(tmp_path / ".generations" / "999999")
    os.symlink(".generations/999999", tmp_path / "current")
    assert publication.begin(str(tmp_path)).name == "1000000"
    assert publication.begin(str(tmp_path)).name == "1000001"


def test_published_files_and_links_list_what_a_reader_finds(tmp_path):
    assert publication.published_files(str(tmp_path)) == [] and publication.links(str(tmp_path)) == []
    written_run(tmp_path, "first")
    assert sorted(publication.published_files(str(tmp_path))) == [
        str(tmp_path / "current" / "decisions" / "part-0"),
        str(tmp_path / "current" / "summary.json"),
    ]
    assert os.readlink(tmp_path / "current") == ".generations/000001"
