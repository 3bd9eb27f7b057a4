"""The documentation's links point somewhere, and the guides render.

The README, ``bench/README.md``, ``kafka_testbed/README.md`` and the guides (``docs/docsite/rst/*.rst``) link to each
other: every relative link must name a file that exists, and an anchor a heading (or label) of that file, as GitHub
renders it (Markdown headings) or as docutils does (RST sections and labels). ``docs/docsite/extra-docs.yml`` lists
exactly the guides there are, each guide starts with its docsite label and renders without a docutils warning, and
every alert the rules can fire has its runbook in the alerts guide, under the anchor ``runbook_url`` links to.
"""

import ast
import glob
import io
import os
import re
import urllib.parse

import docutils.core
import docutils.nodes
import docutils.parsers.rst.roles
import pytest
import yaml

from ansible_collections.headroom.kafka.plugins.module_utils import alert_rules

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCSITE = os.path.join(ROOT, "docs", "docsite")
GUIDES = sorted(glob.glob(os.path.join(DOCSITE, "rst", "*.rst")))
MARKDOWN = [
    os.path.join(ROOT, name)
    for name in ("README.md", "bench/README.md", "kafka_testbed/README.md")
    if os.path.exists(os.path.join(ROOT, name))
]
LABEL_PREFIX = "ansible_collections.headroom.kafka.docsite."
ALERTS_GUIDE = os.path.join(DOCSITE, "rst", "guide_alerts.rst")
ALERT_RULES = os.path.join(ROOT, "plugins", "module_utils", "alert_rules.py")

# Sphinx's :ref: role, which plain docutils does not know: the labels a guide refers to, checked below.
_REFS = []


def _ref_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    match = re.match(r"^(?:.*?<)?([^<>]+?)>?$", text.strip())
    _REFS.append(match.group(1))
    return [docutils.nodes.literal(rawtext, text)], []


def rel(path):
    return os.path.relpath(path, ROOT)


def parse_rst(path):
    """The guide's doctree and the docutils messages of level warning and above."""
    # Registered for each parse: docutils keeps roles in a process-wide table that other code run earlier in the same
    # test process (Sphinx, ansible-doc's rst handling) may reset.
    docutils.parsers.rst.roles.register_local_role("ref", _ref_role)
    messages = io.StringIO()
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    doctree = docutils.core.publish_doctree(
        text,
        source_path=path,
        settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": messages},
    )
    return doctree, messages.getvalue()


def rst_anchors(path):
    """Every id and label of a guide: its sections' ids, as docutils writes them, and its explicit targets."""
    doctree, _messages = parse_rst(path)
    anchors = set()
    for node in doctree.findall(docutils.nodes.Element):
        anchors.update(node.get("ids", []))
        anchors.update(node.get("names", []))
    return anchors


def github_slug(heading):
    """The anchor GitHub gives a Markdown heading: formatting dropped, lower case, punctuation but - and _ removed,
    spaces turned into hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def strip_code(text):
    """Markdown without its fenced code blocks and inline code spans (a link there is not a link)."""
    text = re.sub(r"(?ms)^ *```.*?^ *```", "", text)
    return re.sub(r"`[^`\n]*`", "", text)


def markdown_anchors(path):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    anchors = set()
    seen = {}
    for match in re.finditer(r"(?m)^#{1,6} +(.+?) *#*$", re.sub(r"(?ms)^ *```.*?^ *```", "", text)):
        slug = github_slug(match.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else "{0}-{1}".format(slug, count))
    return anchors


def anchors_of(path):
    return rst_anchors(path) if path.endswith(".rst") else markdown_anchors(path)


def markdown_links(path):
    with open(path, encoding="utf-8") as handle:
        text = strip_code(handle.read())
    return [match.group(1) for match in re.finditer(r"\]\(([^)\s]+)(?: \"[^\"]*\")?\)", text)]


def rst_links(path):
    doctree, _messages = parse_rst(path)
    return [node["refuri"] for node in doctree.findall(docutils.nodes.reference) if "refuri" in node]


def broken(path, target):
    """Why a relative link of the file at path goes nowhere, or None. Links with a scheme are left alone."""
    parts = urllib.parse.urlsplit(target)
    if parts.scheme or parts.netloc:
        return None
    linked = (
        os.path.normpath(os.path.join(os.path.dirname(path), urllib.parse.unquote(parts.path))) if parts.path else path
    )
    if not os.path.exists(linked):
        return "{0} does not exist".format(rel(linked))
    if parts.fragment:
        if os.path.isdir(linked) or not linked.endswith((".md", ".rst")):
            return "an anchor into {0}, which has no headings".format(rel(linked))
        if parts.fragment not in anchors_of(linked):
            return "{0} has no heading or label #{1}".format(rel(linked), parts.fragment)
    return None


def test_there_are_guides_and_readmes_to_check():
    assert len(GUIDES) >= 7
    assert os.path.join(ROOT, "README.md") in MARKDOWN


@pytest.mark.parametrize("path", MARKDOWN, ids=rel)
def test_every_relative_link_of_a_readme_points_somewhere(path):
    problems = ["{0}: {1}".format(link, broken(path, link)) for link in markdown_links(path) if broken(path, link)]
    assert problems == []


@pytest.mark.parametrize("path", GUIDES, ids=rel)
def test_every_relative_link_of_a_guide_points_somewhere(path):
    problems = ["{0}: {1}".format(link, broken(path, link)) for link in rst_links(path) if broken(path, link)]
    assert problems == []


@pytest.mark.parametrize("path", GUIDES, ids=rel)
def test_each_guide_renders_without_a_warning_and_starts_with_its_label(path):
    _doctree, messages = parse_rst(path)
    assert messages == ""
    with open(path, encoding="utf-8") as handle:
        first = handle.readline().strip()
    name = os.path.splitext(os.path.basename(path))[0]
    assert first == ".. _{0}{1}:".format(LABEL_PREFIX, name)


def test_every_ref_names_a_label_of_a_guide():
    del _REFS[:]
    labels = set()
    for path in GUIDES:
        parse_rst(path)
        with open(path, encoding="utf-8") as handle:
            labels.update(re.findall(r"(?m)^\.\. _([^:\n]+):\s*$", handle.read()))
    assert sorted(set(_REFS) - labels) == []


def test_extra_docs_lists_exactly_the_guides():
    with open(os.path.join(DOCSITE, "extra-docs.yml"), encoding="utf-8") as handle:
        extra_docs = yaml.safe_load(handle)
    listed = [name for section in extra_docs["sections"] for name in section["toctree"]]
    assert all(section["title"] for section in extra_docs["sections"])
    assert len(listed) == len(set(listed))
    assert sorted(listed) == sorted(os.path.splitext(os.path.basename(path))[0] for path in GUIDES)


def _alerts_and_runbook():
    """The name of every alert alert_rules.py can render, and the runbook_url the alerts get by default."""
    with open(ALERT_RULES, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    names = {
        node.args[1].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_alert"
    }
    return names, alert_rules.RUNBOOK_URL


def test_every_alert_has_its_runbook_in_the_alerts_guide_where_its_annotations_point():
    names, runbook = _alerts_and_runbook()
    assert len(names) >= 13
    # The default runbook_url is the guide, at its path in the collection's repository.
    assert runbook.endswith("/" + rel(ALERTS_GUIDE))
    doctree, _messages = parse_rst(ALERTS_GUIDE)
    titled = {
        anchor: section[0].astext()
        for section in doctree.findall(docutils.nodes.section)
        if isinstance(section[0], docutils.nodes.title)
        for anchor in section["ids"]
    }
    # runbook_url links to <url>#<alert name, lowercased>: the id of the runbook's section.
    assert {name: titled.get(name.lower()) for name in names} == {name: name for name in names}
