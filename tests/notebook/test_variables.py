"""Describing a variable never runs its class's code: attacks on each rule, in-process."""

from __future__ import annotations

import pandas as pd

from ipy_agent.notebook.variables import describe_value


class Trap(Exception):
    pass


class Meta(type):
    @property
    def __name__(cls):  # a metaclass property: reading the class's name the usual way runs it
        raise Trap("metaclass __name__ ran")


class Spy(metaclass=Meta):
    @property
    def __class__(self):  # isinstance() would consult this
        raise Trap("__class__ ran")

    def __repr__(self):
        raise Trap("__repr__ ran")


class Frame(pd.DataFrame):
    @property
    def shape(self):
        raise Trap("subclass shape ran")


class Listy(list):
    def __len__(self):
        raise Trap("__len__ ran")


def test_no_user_code_runs_for_hostile_objects():
    assert describe_value(Spy())[1].startswith("(not described")
    kind, name = describe_value(Spy)
    assert kind == "class" and name.endswith(".Spy")
    assert "subclass of list, 3 items" in describe_value(Listy([1, 2, 3]))[1]
    assert describe_value(Frame({"a": [1]}))[1].startswith("(not described")


def test_known_types_get_a_structural_summary():
    assert describe_value(pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]}))[1].startswith(
        "shape (2, 2), columns ['a': int64"
    )
    assert describe_value(pd.Series([1, 2, 3], name="n"))[1] == "length 3, dtype int64, name 'n'"
    assert describe_value(10**5000)[1] == "an integer of 16,610 bits"
    assert describe_value("x" * 100)[1].endswith("(100 characters)")
    assert describe_value({"a": 1}) == ("dict", "1 items")
