"""The differential shell fuzzer's commands: generated from attack forms, then mutated.

Every command carries the family it came from (`Case.family`), so a hole is reported by family
and a fix in the classifier flips a whole family at once. Payloads only ever touch the marker
file `PWN` (in the scratch directory, the fake HOME or the canary directory outside), connect to
the canary listener, or leave a `sleep` behind: whatever the classifier lets through, running it
for real harms nothing but the scratch world the suite builds and checks.

The corpus is deterministic (a fixed seed): the same commands every run, so a hole found once is
found again until it is fixed.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

SEED = 20261130
TARGET = 6000  # commands per run (the issue asks for at least 5,000)


@dataclass(frozen=True)
class Case:
    command: str
    family: str


def payloads(canary: str, port: int, sleep: str) -> dict[str, str]:
    """Shell snippets, each with one observable effect (by kind: write, home, outside, net, proc,
    unix). `sleep` is the run's own duration for the process left behind, so runs side by side on
    one machine never take each other's processes for their own. `unix.py` (in the scratch
    directory) connects to the world's Unix socket."""
    return {
        "write": "touch PWN",
        "home": "touch ~/PWN",
        "outside": f"touch {canary}/PWN",
        "net": f"exec 3<>/dev/tcp/127.0.0.1/{port}",
        "proc": f"nohup sleep {sleep} >/dev/null 2>&1 &",
        "unix": "python3 unix.py",
    }


# Families whose every command must be judged not read-only, whatever it does when run: what
# they are is the problem (many commands at once), not an effect the world can see.
MUST_REFUSE = ("fanout:",)


# Where a shell snippet X can hide inside a command that otherwise only reads.
CONTEXTS: dict[str, str] = {
    "cmdsub": "echo $(X)",
    "backtick": "echo `X`",
    "dq-cmdsub": 'echo "$(X)"',
    "procsub": "cat <(X)",
    "procsub-out": "ls > >(X)",
    "default": "echo ${x:-$(X)}",
    "dq-default": 'echo "${x:-$(X)}"',
    "assign-default": "echo ${x:=$(X)}",
    "alt": "echo ${x:+$(X)}",
    "pattern": "echo ${x/$(X)/}",
    "substring": "echo ${x:$(X):1}",
    "arith": "echo $((a[$(X)]))",
    "arith-old": "echo $[a[$(X)]]",
    "subscript": "echo ${a[$(X)]}",
    "dq-subscript": 'echo "${a[$(X)]}"',
    "length-subscript": "echo ${#a[$(X)]}",
    "heredoc": "cat <<EOF\n$(X)\nEOF",
    "heredoc-dash": "cat <<-EOF\n\t$(X)\nEOF",
    "heredoc-backtick": "cat <<EOF\n`X`\nEOF",
    "heredoc-arith": "cat <<EOF\n$((a[$(X)]))\nEOF",
    "herestring": 'cat <<< "$(X)"',
    "test-v": "test -v 'a[$(X)]'",
    "bracket-v": "[ -v 'a[$(X)]' ]",
    "dbl-v": "[[ -v a[$(X)] ]]",
    "dbl-eq": "[[ 'a[$(X)]' -eq 1 ]]",
    "dbl-var": "x='a[$(X)]'; [[ $x -eq 1 ]]",
    "tz": "TZ='a[$(X)]' date",
    "prompt": "x='$(X)'; echo ${x@P}",
    "dq-prompt": "x='$(X)'; echo \"${x@P}\"",
    "printf-v": "printf -v 'a[$(X)]' %s x",
    "for-arith": "for ((i=a[$(X)]; i<0; i++)); do :; done",
    "case": "case $(X) in *) ;; esac",
    "brace": "echo {a,$(X)}",
    "escaped": "echo \\$(X)",
    "squoted": "echo '$(X)'",
    "ansi-c": "echo $'$(X)'",
    "nested": "echo $(echo $(X))",
    "env-wrap": "env echo $(X)",
    "command-wrap": "command echo $(X)",
    "timeout-wrap": "timeout 5 echo $(X)",
    "nice-wrap": "nice echo $(X)",
    "xargs-wrap": "echo a | xargs echo $(X)",
    "time-wrap": "time echo $(X)",
    "subshell": "(X)",
    "group": "{ X; }",
    "func-shadow": "ls() { X; }; ls",
    "func-shadow-cd": "cd() { X; }; cd .",
    "func-def-call": "f() { X; }; f",
    "if": "if true; then X; fi",
    "and": "true && X",
    "pipe-sh": "echo 'X' | sh",
    "pipe-bash": "echo 'X' | bash",
    "bash-c": "bash -c 'X'",
    "eval": "eval 'X'",
    "trap": "trap 'X' EXIT; ls",
}

# Programs and argument forms that act by themselves (X is not a shell snippet here). `{P}` is
# the payload target name, `{OUT}` a file the form writes, `{PORT}` the canary port.
FORMS: dict[str, list[str]] = {
    "sed": [
        "sed -n 'w {OUT}' f.txt",
        "sed 's/a/b/w {OUT}' f.txt",
        "sed 's/a/touch {OUT}/e' f.txt",
        "sed -n '1e touch {OUT}' f.txt",
        "sed -i s/a/b/ f.txt",
        "sed s/a/b/ f.txt -i",
        "sed -ni p f.txt",
        "sed -si s/a/b/ f.txt",
        "sed --in-place s/a/b/ f.txt",
        "sed --in-pl s/a/b/ f.txt",
        "sed -e 'w {OUT}' f.txt",
        "sed --expression='w {OUT}' f.txt",
        "sed '1!w {OUT}' f.txt",
        "sed '/a/w {OUT}' f.txt",
        "sed 's/a/b/gw {OUT}' f.txt",
        "sed 's|a|b|w {OUT}' f.txt",
        "sed 'y/a/b/;w {OUT}' f.txt",
        "sed '{{w {OUT}\n}}' f.txt",
        "sed '$!N;w {OUT}' f.txt",
        "sed -z 'w {OUT}' f.txt",
        "sed 'W {OUT}' f.txt",
        "sed -f evil.sed f.txt",
        "sed $'w {OUT}' f.txt",
        "sed $'\\x77 {OUT}' f.txt",
        "sed 's/a/b/'$'w {OUT}' f.txt",
        "sed 's/a/b/;'$'e touch {OUT}' f.txt",
        "sed -E 's/(a)/\\1/w {OUT}' f.txt",
        "sed -n '/x/,/y/w {OUT}' f.txt",
        "sed '0~1w {OUT}' f.txt",
        "sed 's/a/b/ w {OUT}' f.txt",
        "sed 's/a/b/3w {OUT}' f.txt",
        "sed --posix 'w {OUT}' f.txt",
        "sed 's/a/b/M;w {OUT}' f.txt",
        "sed -s -n 'F;w {OUT}' f.txt",
        "sed 'v;w {OUT}' f.txt",
        "sed 'e' f.txt",
        "sed 's/x/y/;e' cmds.txt",
        "sed 'b;w {OUT}' f.txt",
        "sed ':a;w {OUT}' f.txt",
        "sed 'l 5;w {OUT}' f.txt",
    ],
    "awk": [
        "awk 'BEGIN{{system(\"touch {OUT}\")}}'",
        "awk '{{print > \"{OUT}\"}}' f.txt",
        'awk \'BEGIN{{print "x" | "sh"}}\'',
    ],
    "jq": [
        "jq -n '$ENV'",
        "jq -n 'input_filename'",
        "jq --rawfile a f.txt -n '$a'",
        "jq -L . -n 'import \"evil\" as e; 1'",
        "jq -n '\"x\" | @sh'",
        "jq . f.json",
        "jq -r .a f.json",
    ],
    "rg": [
        "rg --pre ./pwn.sh a",
        "rg --pre=./pwn.sh a",
        "rg --pr ./pwn.sh a",
        "rg --pre-glob '*' --pre ./pwn.sh a",
        "rg --hostname-bin ./pwn.sh --hyperlink-format default a",
        "rg --hostname-bin=./pwn.sh --hyperlink-format=default a",
        "rg -z a",
        "rg --search-zip a",
        "rg a *",
        "rg -- a .",
        "rg --files",
        "rg --type-add 'x:*.txt' -tx a",
    ],
    "find": [
        "find . -exec touch {OUT} \\;",
        "find . -execdir touch {OUT} \\;",
        "find . -ok touch {OUT} \\;",
        "find . -fprint {OUT}",
        "find . -fprintf {OUT} %p",
        "find . -fls {OUT}",
        "find . -fprint0 {OUT}",
        "find . -name PWN -delete",
        "find . '-exec' touch {OUT} ';'",
        "find . -e\\xec touch {OUT} \\;",
        "find . -name x -o -exec touch {OUT} +",
        "find -L . -name x",
        "find . -newer f.txt",
        "find . -files0-from list.txt",
    ],
    "sort": [
        "sort -o {OUT} f.txt",
        "sort --output={OUT} f.txt",
        "sort --outp={OUT} f.txt",
        "sort -o{OUT} f.txt",
        "sort -uo {OUT} f.txt",
        "sort f.txt -o {OUT}",
        "sort --compress-program=./pwn.sh -S 1 big.txt",
        "sort --compress-p=./pwn.sh -S 1 big.txt",
        "sort -T . -S 1 big.txt",
        "sort {{-o,{OUT}}} f.txt",
        "sort -k1 f.txt",
    ],
    "uniq": ["uniq f.txt {OUT}", "uniq -c f.txt {OUT}", "uniq -- f.txt {OUT}", "uniq f.txt"],
    "tree": ["tree -o {OUT}", "tree --output {OUT}"],
    "file": ["file -C -m magic.txt", "file --compile -m magic.txt", "file f.txt"],
    "redirect": [
        "echo x > {OUT}",
        "echo x >| {OUT}",
        "echo x &> {OUT}",
        "echo x >> {OUT}",
        "ls 2> {OUT}",
        "ls &>> {OUT}",
        "echo x 1<> {OUT}",
        "ls >& {OUT}",
        "exec 3> {OUT}",
        "> {OUT}",
        "echo x > /dev/null",
        "echo x >/dev/stdout",
        "cat < /dev/tcp/127.0.0.1/{PORT}",
        "grep x < /dev/tcp/127.0.0.1/{PORT}",
        "echo x > /dev/tcp/127.0.0.1/{PORT}",
        "cat 0<> {OUT}",
        "ls > /dev/fd/1",
        "echo x >/dev/stderr",
    ],
    "git": [
        "git log --output={OUT}",
        "git log --outp={OUT}",
        "git diff --output {OUT}",
        "git -c core.pager='touch {OUT}' log",
        "git --config-env=core.pager=PWNCMD log",
        "git -C . log --output={OUT}",
        "git log --ext-diff -p",
        "git show --output={OUT}",
        "git grep -O'touch {OUT}' a",
        "git grep --open-files-in-pager='touch {OUT}' a",
        "git branch PWN",
        "git tag PWN",
        "git stash list",
        "git config --get user.name",
        "git config --file {OUT} --get x",
        "git ls-remote origin",
        "git remote show origin",
        "git fetch --dry-run origin",
        "git status",
        "git log -1",
        "git diff HEAD",
        "git blame f.txt",
        "git rev-parse HEAD",
        "git archive --remote=origin HEAD",
        "git log --format=%H -1",
        "git shortlog -s HEAD",
        "git describe --always",
        "git worktree list",
        "git submodule status",
        "git notes list",
        "git for-each-ref",
        "git cat-file -p HEAD",
        "git reflog",
    ],
    "xargs": [
        "echo {OUT} | xargs touch",
        "echo {OUT} | xargs -I{{}} touch {{}}",
        "xargs -a list.txt touch",
        "echo x | xargs sh -c 'touch {OUT}'",
        "echo {OUT} | xargs -0 touch",
        "xargs --arg-file=list.txt touch",
        "echo x | xargs -n1 echo",
        "echo . | xargs ls",
        "echo {OUT} | xargs -I % sh -c 'touch %'",
    ],
    "env": [
        "env touch {OUT}",
        "env -i touch {OUT}",
        "env -S 'touch {OUT}'",
        "env --split-string='touch {OUT}'",
        "env -- touch {OUT}",
        "env X=1 touch {OUT}",
        "env -u X touch {OUT}",
        "env -C . touch {OUT}",
        "env",
        "env -0",
    ],
    "builtins": [
        "command touch {OUT}",
        "command -p touch {OUT}",
        "command -v touch",
        "builtin eval 'touch {OUT}'",
        "exec touch {OUT}",
        "eval touch {OUT}",
        ". ./pwn.sh",
        "source ./pwn.sh",
        "hash -p ./pwn.sh ls; ls",
        "enable -n echo; echo x",
        "alias ls='touch {OUT}'; ls",
        "shopt -s expand_aliases; alias ls='touch {OUT}'\nls",
        "export BASH_ENV=./pwn.sh; bash -c :",
        "read -r x < f.txt",
        "declare -p",
        "set -o",
        "type ls",
        "which ls",
    ],
    "wrappers": [
        "timeout 5 touch {OUT}",
        "timeout -s KILL 5 touch {OUT}",
        "timeout --signal=KILL 5 touch {OUT}",
        "timeout -k1 5 touch {OUT}",
        "nice -n5 touch {OUT}",
        "nice -5 touch {OUT}",
        "nice --adjustment=5 touch {OUT}",
        "stdbuf -o0 touch {OUT}",
        "time -o {OUT} ls",
        "time --output={OUT} ls",
        "time -ao {OUT} ls",
        "time -p ls",
        "nohup touch {OUT}",
        "nohup ls",
        "timeout 5 ls",
        "nice ls",
        "stdbuf -oL ls",
        "time ls",
        "timeout 5 sed -i s/a/b/ f.txt",
        "nice sort -o {OUT} f.txt",
        "command sort -o {OUT} f.txt",
        "env sed 'w {OUT}' f.txt",
        "timeout 5 env touch {OUT}",
        "xargs -a list.txt timeout 5 touch",
    ],
    "unix": [
        "curl -s --max-time 2 --unix-socket {SOCK} http://x/",
        "curl -s --max-time 2 --abstract-unix-socket {ABSTRACT} http://x/",
        "python3 unix.py",
        "nc -U {SOCK} < /dev/null",
        "socat - UNIX-CONNECT:{SOCK}",
        "SSH_AUTH_SOCK={SOCK} ssh-add -l",
        "docker -H unix://{SOCK} ps",
        "perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Peer => \"{SOCK}\")'",
        'node -e \'require("net").connect("{SOCK}")\'',
        "git -c http.proxy= ls-remote http://x/ --upload-pack='nc -U {SOCK}'",
    ],
    "fanout": [
        "ls | xargs -P 4 -n1 cat",
        "ls | xargs -P0 -n1 wc -l",
        "ls | xargs -0P4 cat",
        "ls | xargs --max-procs=8 -n1 head -1",
        "find . -name '*.txt' | xargs -n 1 -P 16 grep a",
        "printf '%s\\n' f.txt g.txt | xargs -P2 -I{{}} cat {{}}",
    ],
    "version": ["{PROG} {FLAG}"],
    "interp": [
        'python3 -c \'open("{OUT}", "w")\'',
        "python -c 'import os'",
        "perl -e 'open(F, \">{OUT}\")'",
        'node -e \'require("fs").writeFileSync("{OUT}", "")\'',
        "sh -c 'touch {OUT}'",
        "bash ./pwn.sh",
        "python3 pwn.py",
        "perl pwn.pl",
        "make -f evil.mk",
        "make",
    ],
    "plain": [
        "ls -la",
        "cat f.txt",
        "head -n 2 f.txt",
        "tail -n 1 f.txt",
        "wc -l f.txt",
        "grep -rn a .",
        "grep -c a f.txt",
        "ls -R",
        "du -sh .",
        "stat f.txt",
        "diff f.txt g.txt",
        "cmp f.txt g.txt",
        "cut -c1-3 f.txt",
        "tr a b < f.txt",
        "nl f.txt",
        "od -c f.txt",
        "hexdump -C f.txt",
        "base64 f.txt",
        "md5sum f.txt",
        "sha256sum f.txt",
        "echo hi",
        "printf '%s\\n' a b",
        "pwd",
        "basename /a/b",
        "dirname /a/b",
        "realpath f.txt",
        "readlink -f f.txt",
        "seq 3",
        "date +%s",
        "uname -a",
        "id",
        "whoami",
        "ps -o pid",
        "pgrep -f nothing-here",
        "nproc",
        "test -e f.txt",
        "[ -f f.txt ]",
        "column -t f.txt",
        "comm f.txt g.txt",
        "paste f.txt g.txt",
        "tac f.txt",
        "rev f.txt",
        "fold -w 2 f.txt",
        "expand f.txt",
        "strings f.txt",
        "cksum f.txt",
        "expr 1 + 1",
        "getconf PAGESIZE",
        "locale",
        "hostname",
        "sleep 0.01",
        "true",
        "false",
        "cd . && ls",
        "ls | head -1",
        "cat f.txt | wc -c",
    ],
}

VERSION_PROGRAMS = (
    "python",
    "python3",
    "node",
    "npm",
    "npx",
    "pip",
    "pip3",
    "cargo",
    "rustc",
    "java",
    "javac",
    "gcc",
    "make",
    "cmake",
    "docker",
    "perl",
    "pytest",
    "bash",
    "sh",
    "git",
    "rg",
    "jq",
    "kubectl",
    "terraform",
    "gh",
    "go",
)
VERSION_FLAGS = ("--version", "-V", "version", "-version")

_QUOTES = (
    lambda w: f"'{w}'",
    lambda w: f'"{w}"',
    lambda w: "\\" + w if w[:1].isalpha() else w,
    lambda w: f"$'{w}'",
    lambda w: w[:1] + "''" + w[1:] if len(w) > 1 else w,
    lambda w: w[:1] + '""' + w[1:] if len(w) > 1 else w,
)
_WRAP = (
    "env ",
    "command ",
    "timeout 5 ",
    "nice ",
    "nice -n 3 ",
    "stdbuf -o0 ",
    "time ",
    "LANG=C ",
    "LC_ALL=C ",
    "TZ=UTC ",
    "env -i ",
    "command -p ",
    "timeout -k 1 5 ",
    "nohup ",
    "builtin ",
    "\\",
    "exec ",
)
_JOIN = (" ; ", " && ", " || ", " | ", "\n", " & ")
_READERS = ("ls", "cat f.txt", "echo ok", "pwd", "grep a f.txt", "head -1 f.txt", "wc -c f.txt", "true")


def fill_form(form: str, target: str, port: int) -> str:
    return (
        form.replace("{OUT}", target)
        .replace("{PORT}", str(port))
        .replace("{SOCK}", UNIX_SOCKET)
        .replace("{ABSTRACT}", f"{ABSTRACT_SOCKET}-{port}")
        .replace("{{", "{")
        .replace("}}", "}")
    )


# The world's Unix sockets: in the scratch directory (a path), and by name (abstract; the
# listener's port makes it this run's own).
UNIX_SOCKET = "u.sock"
ABSTRACT_SOCKET = "ipy-agent-fuzz"


def base_cases(canary: str, port: int, sleep: str) -> list[Case]:
    """Every context with every payload, every form with each write target: the systematic part."""
    out: list[Case] = []
    for (ctx_name, ctx), (_kind, payload) in itertools.product(CONTEXTS.items(), payloads(canary, port, sleep).items()):
        out.append(Case(command=ctx.replace("X", payload), family=f"context:{ctx_name}"))
    targets = ("PWN", "~/PWN", f"{canary}/PWN")
    for family, forms in FORMS.items():
        for form in forms:
            if family == "version":
                for prog, flag in itertools.product(VERSION_PROGRAMS, VERSION_FLAGS):
                    out.append(Case(command=f"{prog} {flag}", family=f"version:{prog} {flag}"))
                continue
            fam = f"{family}:{form}"
            if "{OUT}" in form:
                out += [Case(command=fill_form(form, t, port), family=fam) for t in targets]
            else:
                out.append(Case(command=fill_form(form, "PWN", port), family=fam))
    return out


def _mutate(rng: random.Random, case: Case) -> Case:
    """One random change that keeps the meaning for bash but may change it for a parser."""
    cmd = case.command
    choice = rng.randrange(6)
    if choice == 0:  # re-quote one word
        words = cmd.split(" ")
        i = rng.randrange(len(words))
        if words[i] and not set(words[i]) & set("'\"$`\\(){}<>|;&\n"):
            words[i] = rng.choice(_QUOTES)(words[i])
        cmd = " ".join(words)
    elif choice == 1:  # a wrapper in front
        cmd = rng.choice(_WRAP) + cmd
    elif choice == 2:  # joined with a harmless reader
        a, b = rng.choice(_READERS), cmd
        cmd = f"{a}{rng.choice(_JOIN)}{b}" if rng.random() < 0.5 else f"{b}{rng.choice(_JOIN[:-1])}{a}"
    elif choice == 3:  # inside a substitution context
        cmd = rng.choice(["echo $({c})", "cat <(echo; {c})", "x=$({c}); echo $x", 'echo "`{c}`"']).format(c=cmd)
    elif choice == 4:  # option spelled another way
        cmd = (
            cmd.replace("--output=", "--output ")
            .replace(" -o ", " -o")
            .replace("--pre=", "--pre ")
            .replace(" -i ", " --in-place ")
            .replace("-exec ", "-execdir ")
        )
    else:  # redirect stderr, or piped through a reader
        cmd = cmd + rng.choice([" 2>/dev/null", " | head -5", " | cat", " </dev/null", " 2>&1"])
    return Case(command=cmd, family=case.family)


def corpus(canary: str, port: int, sleep: str, target: int = TARGET, seed: int = SEED) -> list[Case]:
    """The systematic cases, then seeded mutations of them until `target` distinct commands."""
    rng = random.Random(seed)
    base = base_cases(canary, port, sleep)
    seen = {c.command for c in base}
    out = list(base)
    # Version probes start heavy programs (a JVM, kubectl, terraform): covered once each above,
    # and not multiplied by mutation, so the suite stays within minutes.
    seeds = [c for c in base if not c.family.startswith("version:")]
    while len(out) < target:
        case = rng.choice(seeds)
        for _ in range(rng.randrange(1, 3)):
            case = _mutate(rng, case)
        if case.command not in seen:
            seen.add(case.command)
            out.append(case)
    return out
