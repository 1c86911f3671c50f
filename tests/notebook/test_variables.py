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


class Forwarder:
    """A proxy: every attribute it does not have is answered by its own code."""

    def __getattr__(self, name):
        raise Trap(f"__getattr__({name!r}) ran")

    def __call__(self, *args):
        return None


class EqMeta(type):
    def __eq__(cls, other):
        raise Trap("metaclass __eq__ ran")

    __hash__ = type.__hash__

    def __getattribute__(cls, name):
        if name in ("__mro__", "__len__", "__name__"):
            raise Trap(f"metaclass __getattribute__({name!r}) ran")
        return super().__getattribute__(name)


class Tricky(str, metaclass=EqMeta):
    pass


def test_only_type_level_lookups_for_methods_proxies_and_metaclasses():
    import types
    import weakref

    bound = types.MethodType(Forwarder(), object())  # a "method" whose function is a proxy
    assert describe_value(bound) == (
        "function",
        "a bound method of a tests.notebook.test_variables.Forwarder (not described)",
    )

    class Plain:
        def go(self):
            pass

    assert describe_value(Plain().go)[1].endswith("Plain.go")
    target = Forwarder()
    assert describe_value(weakref.proxy(target))[1].startswith("(not described")
    assert "subclass of str" in describe_value(Tricky("abc"))[1]
    assert (
        describe_value(Tricky("abc"), "API_TOKEN")[1]
        == "3 characters, value not shown: its name looks like a credential"
    )


def test_credentials_show_only_their_type_and_length(monkeypatch):
    monkeypatch.setenv("CORP_DEPLOY_TOKEN", "corp-0123456789-value")
    cases = {
        ("API_TOKEN", "not-a-token-shape-but-named-so"): "its name looks like a credential",
        ("db_password", "hunter2hunter2"): "its name looks like a credential",
        ("note", "ghp_" + "a" * 36): "it looks like a credential",
        ("url", "postgres://app:s3cret-pass@db:5432/x"): "it looks like a credential",
        ("blob", "prefix corp-0123456789-value suffix"): "it looks like a credential",
        ("claims", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc"): "it looks like a credential",
    }
    for (name, value), why in cases.items():
        kind, summary = describe_value(value, name)
        assert kind == "str" and summary == f"{len(value)} characters, value not shown: {why}", (name, summary)
        assert value not in summary
    assert describe_value(1234, "PIN_PASS") == ("int", "value not shown: its name looks like a credential")
    assert describe_value("hello world", "greeting") == ("str", "'hello world'")


def test_named_data_values_get_columns_nulls_and_ranges_without_element_reprs():
    from types import SimpleNamespace

    import numpy as np

    from ipy_agent.notebook.variables import describe_detail, describe_namespace

    class Loud:  # an element of an object column: its repr and str must never run
        def __repr__(self) -> str:
            raise Trap("an element's __repr__ ran")

        __str__ = __repr__

    frame = pd.DataFrame({"price": [1.5, None, 9.0], "city": ["a", None, "c"], "thing": [Loud(), None, Loud()]})
    assert describe_detail(frame) == (
        "3 rows × 3 columns\n"  # noqa: RUF001
        "'price': float64, 1 null, range 1.5 to 9\n"
        f"'city': {frame.dtypes['city']}, 1 null\n"
        "'thing': object, 1 null"
    )
    assert describe_detail(np.array([[1, 7], [-2, 3]])) == "dtype int64, shape (2, 2), min -2, max 7"
    assert describe_detail(np.array([0.5, np.nan])) == "dtype float64, shape (2,), min 0.5, max 0.5, 1 NaN"
    assert describe_detail(Frame({"a": [1]})) is None  # a subclass could override what is read
    assert describe_detail([1, 2]) is None
    shell = SimpleNamespace(user_ns={"frame": frame, "api_token": frame, "n": 3}, user_ns_hidden={})
    infos = {i.name: i for i in describe_namespace(shell, names=["frame", "api_token", "n"])}
    assert infos["frame"].detail is not None and "'price'" in infos["frame"].detail
    assert infos["api_token"].detail is None and infos["n"].detail is None
    assert all(i.detail is None for i in describe_namespace(shell))  # the listing stays short


# A class whose every way of running code records that it ran: the metaclass's attribute lookup,
# repr, str, len, equality, format and name properties, and the instance's own. `ran` is the flag;
# `armed` turns it on once the namespace is built (building it reads attributes the ordinary way).
ran: list[str] = []
armed = [False]


def _record(what: str) -> None:
    if armed[0]:
        ran.append(what)


class Loud:
    """An object a class body may put in `__module__`: comparing or formatting it runs its code."""

    def __eq__(self, other):
        _record("__module__ object's __eq__")
        return False

    __hash__ = object.__hash__

    def __str__(self):
        _record("__module__ object's __str__")
        return "loud"

    __repr__ = __str__

    def __format__(self, spec):
        _record("__module__ object's __format__")
        return "loud"


class HostileMeta(type):
    def __getattribute__(cls, name):
        _record(f"metaclass __getattribute__({name!r})")
        return super().__getattribute__(name)

    def __getattr__(cls, name):
        _record(f"metaclass __getattr__({name!r})")
        raise AttributeError(name)

    def __repr__(cls):
        _record("metaclass __repr__")
        return "Hostile"

    __str__ = __repr__

    def __len__(cls):
        _record("metaclass __len__")
        return 0

    def __eq__(cls, other):
        _record("metaclass __eq__")
        return False

    __hash__ = type.__hash__

    @property
    def __name__(cls):
        _record("metaclass __name__ property")
        return "Hostile"


class Hostile(metaclass=HostileMeta):
    def __getattribute__(self, name):
        _record(f"instance __getattribute__({name!r})")
        return object.__getattribute__(self, name)

    def __getattr__(self, name):
        _record(f"instance __getattr__({name!r})")
        raise AttributeError(name)

    def __repr__(self):
        _record("instance __repr__")
        return "hostile"

    def __len__(self):
        _record("instance __len__")
        return 0

    @property
    def __class__(self):
        _record("instance __class__ property")
        return Hostile


class Odd(metaclass=HostileMeta):
    __module__ = Loud()  # a class body may set it to anything


def _hostile_namespace():
    from types import SimpleNamespace

    obj = Hostile()
    ns = {
        "obj": obj,
        "cls": Hostile,
        "sizeof": obj.__sizeof__,  # a builtin method bound to an instance of the hostile class
        "mro": Hostile.mro,  # a builtin method bound to the hostile class itself
        "init_subclass": Hostile.__init_subclass__,
        "odd": Odd(),
        "odd_cls": Odd,
    }
    return SimpleNamespace(user_ns=ns, user_ns_hidden={})


def _listing(monkeypatch=None):
    from ipy_agent.notebook.variables import describe_namespace

    shell = _hostile_namespace()
    ran.clear()
    armed[0] = True
    try:
        infos = describe_namespace(shell)
        asked = describe_namespace(shell, names=list(shell.user_ns))
    finally:
        armed[0] = False
    return {i.name: (i.type, i.summary) for i in infos}, asked


def test_variables_runs_no_code_of_a_hostile_class_or_metaclass_builtin_methods_included():
    shown, asked = _listing()
    assert ran == []
    assert len(asked) == 7
    assert shown["obj"] == (
        "tests.notebook.test_variables.Hostile",
        "(not described: no code of this type is run to look at it)",
    )
    assert shown["cls"] == ("class", "tests.notebook.test_variables.Hostile")
    assert shown["sizeof"] == ("function", "Hostile.__sizeof__")
    assert shown["mro"] == ("function", "Hostile.mro")
    assert shown["init_subclass"] == ("function", "Hostile.__init_subclass__")
    assert shown["odd"][0] == "Odd" and shown["odd_cls"] == ("class", "Odd")  # its module is not a str: left out


def _undefended_function_name(value, t):
    """How variables.py named a builtin method before: through the builtin's own `__qualname__`."""
    import types

    return str(types.BuiltinFunctionType.__dict__["__qualname__"].__get__(value))


def _undefended_type_name(t):
    """How variables.py named a class before: its `__module__` compared and formatted as it is."""
    module = type.__dict__["__module__"].__get__(t)
    name = type.__dict__["__qualname__"].__get__(t)
    return name if module in ("builtins", "__main__", None) else f"{module}.{name}"


def test_control_the_old_readings_run_the_hostile_code(monkeypatch):
    from ipy_agent.notebook import variables

    monkeypatch.setattr(variables, "_function_name", _undefended_function_name)
    _listing()
    assert "metaclass __getattribute__('__qualname__')" in ran  # obj.__sizeof__, Hostile.mro
    monkeypatch.undo()
    monkeypatch.setattr(variables, "_type_name", _undefended_type_name)
    _listing()
    assert "__module__ object's __eq__" in ran and "__module__ object's __format__" in ran


def test_builtins_and_modules_keep_their_names():
    import math

    assert describe_value(len) == ("function", "len")
    assert describe_value(math.sqrt) == ("function", "sqrt")
    assert describe_value([].append) == ("function", "list.append")
    assert describe_value(dict.fromkeys) == ("function", "dict.fromkeys")
    assert describe_value(object().__repr__) == ("function", "object.__repr__")
    assert describe_value(math) == ("module", "math")
