"""An argument list as a systemd ExecStart= line: plain words as they are, the rest double-quoted with C escapes, and
systemd's own % and $ doubled in every word. The same lines run on a real host in tests/hosts (the usage pipeline's
unit)."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils.systemd_command import (
    SystemdCommandError,
    environment_file,
    exec_line,
    exec_word,
)


@pytest.mark.parametrize(
    "argument, word",
    [
        ("--out", "--out"),
        ("/var/lib/headroom/out", "/var/lib/headroom/out"),
        ("spark.sql.shuffle.partitions=8", "spark.sql.shuffle.partitions=8"),
        ("kafka://b1:9092,b2:9092/snapshots", "kafka://b1:9092,b2:9092/snapshots"),
        ("local[*]", '"local[*]"'),
        ("two words", '"two words"'),
        ("", '""'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("50%", '"50%%"'),
        ("$HOME", '"$$HOME"'),
        ("${HOME}/x", '"$${HOME}/x"'),
        ("it's", '"it\'s"'),
        ("line\nbreak\ttab", '"line\\nbreak\\ttab"'),
        ("snapshots-*.jsonl", '"snapshots-*.jsonl"'),
        # A final line break is not a plain word (a regular expression's $ matches before it): systemd would end the
        # line there and drop every later argument.
        ("prod\n", '"prod\\n"'),
    ],
)
def test_each_argument_is_one_word(argument, word):
    assert exec_word(argument) == word


def test_the_line_joins_the_words():
    argv = ["/opt/venv/bin/python", "-m", "headroom_pipeline", "run", "--master", "local[*]", "--out", "/srv/o ut"]
    assert exec_line(argv) == '/opt/venv/bin/python -m headroom_pipeline run --master "local[*]" --out "/srv/o ut"'


@pytest.mark.parametrize(
    "argv, said",
    [
        ([], "the command is empty"),
        (["python3", "-m", "x"], "the program must be an absolute path for systemd (got 'python3')"),
        (["/usr/bin/python3", 3], "every argument must be a string (got 3)"),
        (["/usr/bin/python3", "a\x00b"], "an argument holds a NUL character"),
    ],
)
def test_a_command_no_line_can_carry_is_refused_with_the_argument(argv, said):
    with pytest.raises(SystemdCommandError, match=said.replace("(", r"\(").replace(")", r"\)")):
        exec_line(argv)


def test_an_environment_file_carries_each_value_exactly_with_only_what_systemd_unescapes_escaped():
    variables = {"HEADROOM_KAFKA_SASL_PASSWORD": "pä\"s\\$w%rd`x'", "EMPTY": ""}
    assert environment_file(variables) == ('HEADROOM_KAFKA_SASL_PASSWORD="pä\\"s\\\\\\$w%rd\\`x\'"\nEMPTY=""\n')


@pytest.mark.parametrize(
    "variables, said",
    [
        ({"PASSWORD": "one\ntwo"}, "PASSWORD: the value holds a line break or another control character"),
        ({"PASSWORD": "tab\there"}, "PASSWORD: the value holds a line break"),
        ({"2BAD": "x"}, "'2BAD' is not an environment variable name"),
        ({"PASSWORD": 3}, "PASSWORD: the value must be a string"),
    ],
)
def test_an_environment_file_refuses_what_it_cannot_carry_naming_the_variable(variables, said):
    with pytest.raises(SystemdCommandError, match=said):
        environment_file(variables)
