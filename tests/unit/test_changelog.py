"""The changelog as antsibull-changelog reads it: every fragment in changelogs/fragments passes its lint (a section of
changelogs/config.yaml, a list of strings, valid RST) and holds one change, and changelogs/changelog.yaml passes its
lint, so that ``antsibull-changelog release`` can record the next release (docs/docsite/rst/guide_development.rst)."""

import glob
import os

import yaml
from antsibull_changelog.config import ChangelogConfig, CollectionDetails, PathsConfig
from antsibull_changelog.fragment import ChangelogFragmentLinter, load_fragments
from antsibull_changelog.lint import lint_changelog_yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FRAGMENTS = sorted(glob.glob(os.path.join(ROOT, "changelogs", "fragments", "*.yml")))


def lint_fragments(paths=None):
    """``antsibull-changelog lint``: one message per problem, naming the file."""
    config_paths = PathsConfig.force_collection(ROOT)
    config = ChangelogConfig.load(config_paths, CollectionDetails(config_paths))
    exceptions = []
    fragments = load_fragments(config_paths, config, paths, exceptions)
    linter = ChangelogFragmentLinter(config)
    errors = [f"{os.path.relpath(path, ROOT)}: {error}" for path, error in exceptions]
    for fragment in fragments:
        errors += [
            f"{os.path.relpath(path, ROOT)}:{line}:{column}: {text}"
            for path, line, column, text in linter.lint(fragment)
        ]
    return errors


def test_every_fragment_passes_the_lint():
    assert lint_fragments() == []


def test_the_last_release_recorded_is_galaxy_yml_version_and_its_notes_are_written():
    """A release recorded with antsibull-changelog: changelog.yaml's newest release is the version galaxy.yml builds,
    with a summary, and CHANGELOG.rst (which the artifact ships) has its section."""
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        version = yaml.safe_load(handle)["version"]
    with open(os.path.join(ROOT, "changelogs", "changelog.yaml"), encoding="utf-8") as handle:
        releases = yaml.safe_load(handle)["releases"]
    assert max(releases, key=lambda release: tuple(int(part) for part in release.split("."))) == version
    assert releases[version]["changes"]["release_summary"]
    with open(os.path.join(ROOT, "CHANGELOG.rst"), encoding="utf-8") as handle:
        assert f"\nv{version}\n" in handle.read()


def test_every_fragment_holds_one_change():
    entries = {}
    for path in FRAGMENTS:
        with open(path, encoding="utf-8") as handle:
            sections = yaml.safe_load(handle) or {}
        entries[os.path.relpath(path, ROOT)] = sum(
            len(items) if isinstance(items, list) else 1 for items in sections.values()
        )
    assert {path: count for path, count in entries.items() if count != 1} == {}, "one change per fragment: split it"


def test_a_bad_fragment_fails_the_lint(tmp_path):
    unknown_section = tmp_path / "unknown-section.yml"
    unknown_section.write_text("---\nnew_stuff:\n  - headroom_guard - something.\n", encoding="utf-8")
    not_a_list = tmp_path / "not-a-list.yml"
    not_a_list.write_text("---\nbugfixes: headroom_guard - something.\n", encoding="utf-8")
    errors = lint_fragments([str(unknown_section), str(not_a_list)])
    assert any("unknown-section.yml" in error and "new_stuff" in error for error in errors), errors
    assert any("not-a-list.yml" in error and "list" in error for error in errors), errors


def test_the_changelog_yaml_passes_its_lint():
    assert lint_changelog_yaml(os.path.join(ROOT, "changelogs", "changelog.yaml")) == []
