"""The secret fuzzer's commands: the shell's usual ways to print a secret, composed.

A command reads the secret from a file (`secret.txt`, the secret on one line among others) or
from a credential-named environment variable, changes its characters (nothing, `rev`, `tr` to
upper or lower case, rot13, `tr -d` of a class), then lays it out (`od` in its formats, `xxd`,
`hexdump`, `fold`, `base32`, `base64`, columns cut apart and printed one after the other).
Widths (fold, cut, od -w, xxd -c) are drawn from a fixed seed: the same commands every run.

Every piece the layouts print carries at least `FRAGMENT` characters of the secret (14 of its
base64), or is the edge of one (what precedes the secret on its line, what follows it): what the
redaction promises to find. Pieces shorter than that are a documented limit, not a case here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

SEED = 20261204
FRAGMENT = 10  # the fewest characters of a secret a piece must carry to be redacted on its own
BASE64_FRAGMENT = 14  # base64 characters that carry FRAGMENT characters


@dataclass(frozen=True)
class Case:
    command: str
    family: str  # the layout (what the old redaction did not know is named here)


# How the secret gets into the pipe: a file among others, or a variable the process was given.
SOURCES = {
    "file": "cat secret.txt",
    "env": 'printf "user=svc\\nexport SVC_DEPLOY_TOKEN=%s\\nhost=db.internal\\n" "$SVC_DEPLOY_TOKEN"',
}

# What a program may do to the characters first.
TRANSFORMS = {
    "": "",
    "rev": " | rev",
    "upper": " | tr a-z A-Z",
    "lower": " | tr A-Z a-z",
    "rot13": " | tr 'A-Za-z' 'N-ZA-Mn-za-m'",
    "no-digits": " | tr -d '[:digit:]'",
    "no-punct": " | tr -d '[:punct:]'",
    "no-dash": " | tr -d -- -",
}


def _layouts(rng: random.Random) -> dict[str, str]:
    """Layout name -> the tail of a pipeline that prints its input that way."""
    fold = rng.randint(FRAGMENT, 17)
    return {
        "as-is": "",
        "od -c": " | od -c",
        "od -An -c": " | od -An -c",
        "od -c -w": f" | od -c -w{rng.randint(5, 12)}",
        "od -b": " | od -b",
        "od -x": " | od -x",
        "od -An -x": " | od -An -x",
        "od -tx1": " | od -tx1",
        "od -An -tx1": " | od -An -tx1",
        "xxd": " | xxd",
        "xxd -c": f" | xxd -c {rng.randint(6, 20)}",
        "xxd -p": " | xxd -p",
        "hexdump -C": " | hexdump -C",
        "hexdump": " | hexdump",
        "fold": f" | fold -w {fold}",
        "fold narrow": f" | fold -w {rng.randint(2, 6)}",  # pieces on consecutive lines: joined back
        "base32": " | base32",
        "base32 -w0": " | base32 -w0",
        "base64": " | base64",
        "base64 -w0 | rev": " | base64 -w0 | rev",
    }


def _cut_apart(pipeline: str, width: int) -> str:
    """The pipeline's output cut into columns of `width`, each column printed after the last:
    every piece is far from the next (the other lines' pieces come in between)."""
    pieces = [f"cut -c{i * width + 1}-{(i + 1) * width} out.txt" for i in range(9)] + [
        f"cut -c{9 * width + 1}- out.txt"
    ]
    return f"{pipeline} > out.txt; " + "; echo ---; ".join(pieces)


def corpus(seed: int = SEED) -> list[Case]:
    """Every source, transform and layout, with cut-apart columns of drawn widths."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for source_name, source in SOURCES.items():
        for transform_name, transform in TRANSFORMS.items():
            for layout_name, layout in _layouts(rng).items():
                cases.append(Case(f"{source}{transform}{layout}", _family(source_name, transform_name, layout_name)))
            width = rng.randint(FRAGMENT, 16)
            cases.append(Case(_cut_apart(source + transform, width), _family(source_name, transform_name, "cut apart")))
            encoded = f"{source}{transform} | base64 -w0"
            width = rng.randint(BASE64_FRAGMENT, 20)
            cases.append(Case(_cut_apart(encoded, width), _family(source_name, transform_name, "base64 cut apart")))
    return cases


def _family(source: str, transform: str, layout: str) -> str:
    """`file: rot13 + xxd`, `env: od -c`."""
    return f"{source}: {' + '.join(x for x in (transform, layout) if x)}"
