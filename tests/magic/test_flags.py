"""kernel_nb.magic.flags: the one table of the magic's flags, and what is made from it."""

from __future__ import annotations

import dataclasses

from kernel_nb.gpu.session import GpuOptions
from kernel_nb.magic import TKernelMagics, flags
from kernel_nb.options import Options


def test_each_flag_sets_a_field_that_exists_and_no_two_set_the_same():
    fields = {
        "options": {f.name for f in dataclasses.fields(Options)},
        "gpu": {f.name for f in dataclasses.fields(GpuOptions)},
    }
    for flag in flags.FLAGS:
        if flag.target in fields:
            assert flag.dest in fields[flag.target], flag.name
    dests = [flag.dest for flag in flags.FLAGS]
    assert len(dests) == len(set(dests))


def test_the_parser_has_the_tables_flags_in_its_order():
    parser = TKernelMagics.tkernel.parser  # type: ignore[attr-defined]
    actions = [a for a in parser._actions if a.dest != "help"]
    assert [a.option_strings[0] if a.option_strings else a.dest for a in actions] == [
        flag.name for flag in flags.FLAGS
    ]
    assert [a.dest for a in actions] == [flag.dest for flag in flags.FLAGS]


def test_only_the_magics_own_settings_need_a_default_in_the_table():
    assert {flag.dest: flag.default for flag in flags.FLAGS if flag.target == "magic"} == {
        "ir": False,
        "quiet": False,
    }
    kept = flags.Defaults(Options())
    assert [flag.show(kept.value(flag)) for flag in flags.DEFAULTS][:3] == ["all", "64M", "off"]
