"""The read-only classifier attacked as a hostile model would: every command here once ran, or
could have run, without the person being asked. Each must now ask (or be denied) in default
mode and in plan mode, and most are no longer judged read-only at all.

Grouped by the hole they test: programs whose arguments are code, words the parser cannot see
through, path checks with blanket skips, the network, and wrappers that hide what runs.
"""

from __future__ import annotations

import pytest

from ipy_agent.tools.bash.verdict import is_read_only_command, read_only_reason
from tests.support.bash import decision, project

# Programs whose arguments are programs: only forms proven safe are read-only.
CODE_IN_ARGUMENTS = [
    # sed: commands that write, run or read files; options that edit in place or load scripts
    "sed 'e id' f",
    "sed -n 'w out' f",
    "sed 's/a/b/w out' f",
    "sed 's/a/b/e' f",
    "sed '1r /etc/passwd' f",
    "sed -n '1R /etc/shadow' f",
    "sed 'W out' f",
    "sed -i s/a/b/ f",
    "sed --in-place=.bak s/a/b/ f",
    "sed -f script.sed f",
    "sed --follow-symlinks -i s/a/b/ f",
    "sed -n -e p -e 'w x' f",
    "sed -ne 'e id' f",
    "sed -s --unknown p f",
    "sed '/x/{p;w out\n}' f",
    # awk: system, pipes, redirections, getline, ARGV, gawk's loaders
    "awk 'BEGIN{system(\"id\")}'",
    "awk '{print | \"sh\"}' f",
    "awk '{print > \"out\"}' f",
    'awk \'{printf("%s", $1) > "out"}\' f',
    "awk '{print $1 >> \"out\"}' f",
    "awk '{\"date\" | getline d}' f",
    "awk 'BEGIN{getline l < \"/etc/shadow\"; print l}'",
    "awk 'BEGIN{ARGV[1]=\"/etc/passwd\";ARGC=2}{print}'",
    "awk '@load \"readfile\"; {print}' f",
    "awk -f prog.awk f",
    "awk -i inplace '{print}' f",
    "awk -l filefuncs '{print}' f",
    "awk -E prog.awk f",
    'awk \'/"/ {print > "out"}\' f',
    'awk \'{print "a;" > "out"}\' f',
    "gawk 'BEGIN{print ENVIRON[\"ANTHROPIC_API_KEY\"]}'",
    "awk 'BEGIN { while ((\"ls\" |& getline l) > 0) print l }'",
    # jq: the environment, files named or loaded by the filter or options
    "jq -n env",
    "jq -n '$ENV.ANTHROPIC_API_KEY'",
    "jq -n 'input_filename'",
    "jq -n '$__loc__'",
    "jq -n 'import \"x\" as x; 1'",
    "jq -n 'include \"x\"; 1'",
    "jq -f filter.jq f.json",
    "jq --rawfile k /etc/shadow -n '$k'",
    "jq --slurpfile k f.json -n '$k'",
    "jq -L /tmp -n 1",
    "jq --from-file filter.jq f.json",
    # ripgrep: preprocessors and decompressors are programs
    "rg --pre ./x foo",
    "rg --pre=sh foo",
    "rg --pre-glob '*' foo",
    "rg -z foo",
    "rg --search-zip foo",
    "rg --hostname-bin=./x foo",
    # find: actions that delete, write or run
    "find . -exec rm {} \\;",
    "find . -execdir sh -c id \\;",
    "find . -ok rm {} \\;",
    "find . -delete",
    "find . -fprint out",
    "find . -fprintf out %p",
    "find . -fls out",
    # git: configuration on the command line, external programs, writes, the network
    "git -c core.pager='sh -c id' log",
    "git -c alias.x='!id' x",
    "git --config-env=core.pager=X log",
    "git --exec-path=. log",
    "git log --ext-diff -p",
    "git diff --ext-diff",
    "git log --show-signature",
    "git log --format=%G?",
    "git show --pretty=%GG",
    "git log --output=out",
    "git diff --out=out",
    "git grep -O foo",
    "git grep --open-files-in-pager=sh foo",
    "git tag -v v1",
    "git verify-commit HEAD",
    "git remote show origin",
    "git fetch",
    "git ls-remote origin",
    "git pull",
    "git clone https://x/y",
    "git config core.pager sh",
    "git config --add x.y z",
    "git st",
    "git --git-dir=/tmp/x log",
    "git stash drop",
    "git branch -D x",
    "git tag x",
    # bare words some programs run as files or targets, and version probes that run project code
    "python version",
    "node version",
    "make version",
    "pytest --version",
    "yarn --version",
    "pnpm --version",
    "cargo --version",
    "go version",
    "kubectl version",
    "terraform version",
    "python -c 'print(1)'",
    "python x.py",
    "node -e 1",
    "bash x.sh",
    "sh",
    "npm version",
    # pip beyond local metadata
    "pip list --outdated",
    "pip list -o",
    "pip download x",
    "pip install x",
    "pip list --index-url http://x",
    "pip freeze -r requirements.txt",
    # sort, uniq, tree, date, file, time, hostname: their writing forms
    "sort -o out f",
    "sort --output=out f",
    "sort --compress-program=sh f",
    "uniq f out",
    "tree -o out",
    "date -s 2020-01-01",
    "date 010101012020",
    "file -C -m x",
    "time -o out ls",
    "hostname evil",
]

# Words the parser cannot see through: substitutions in every context, expansions, escapes.
UNSEEN = [
    "cat <<EOF\n$(id)\nEOF",
    "cat <<EOF\nit's `id`\nEOF",
    "cat <<-EOF\n\t`id`\nEOF",
    "echo ${x:-$(id)}",
    "echo ${x:-`id`}",
    'echo "${x/a/`id`}"',
    "echo ${a[$(id)]}",
    "echo $(( a[$(id)] ))",
    "echo $((x))",
    "echo $[x]",
    "echo ${x@P}",
    "echo ${!x}",
    "echo ${x:y}",
    "cat <(id)",
    "diff <(ls) f",
    "cat <<< $(id)",
    "ls `id`",
    "echo $(id)",
    "[[ -v a[$(id)] ]]",
    "[[ x -eq y ]]",
    "test -v 'a[$(id)]'",
    "TZ='a[$(id)]' date",
    "x=$(id) ls",
    "ls $X",
    'cat "$F"',
    "cat $HOME/.ssh/id_rsa",
    "grep x $F",
    "cat ~root/x",
    "cat ~+/x",
    "cat ~-/x",
    "ls a=~/x",
    "$CMD",
    '"$CMD" x',
    "${CMD} x",
    "cat < $F",
    "cat < ~root/x",
    'wc -l < "$F"',
    "echo a\\\nb; r\\\nm x",
    "ls; if then",
    "cat 'unterminated",
    "pwd\n\\env -i touch x",
    # a process in the background outlives the call (found by the differential fuzzer)
    "wc -c f & sleep 0.01",
    "sleep 100 &",
]

# Path checks without blanket skips: what a command reads must be inside the working directories.
OUTSIDE = [
    "cat /etc/passwd",
    "cat /dev/../etc/passwd",
    "head -n1 /dev/../../etc/shadow",
    "grep -f/etc/passwd x f",
    "grep -rf../../x y f",
    "grep --file=/etc/passwd x f",
    "date -f /etc/shadow",
    "date --file=/etc/shadow",
    "cat -- /etc/passwd",
    "cat ../../x",
    "ls ~",
    "ls -la ~/",
    "cat ~/.bashrc",
    "cd / && ls",
    "cd .. && cat x",
    "cat < ../../../etc/passwd",
    "cat < /etc/passwd && cd src",
    "git -C / status",
    "git blame /etc/passwd",
    "find / -name x",
    "echo /etc/passwd | xargs cat",
    "sort -T /tmp f",
    "diff /etc/passwd f",
    "cat < /dev/tcp/127.0.0.1/80",
    "head -c1 </dev/udp/127.0.0.1/53",
]

# Reaching the network: never read-only.
NETWORK = [
    "curl http://x",
    "wget http://x",
    "nc 127.0.0.1 80",
    "ssh host",
    "ping -c1 x",
    "dig x",
    "host x",
    "nslookup x",
    "pip download x",
    "git fetch",
    "git ls-remote x",
    "git clone x",
    "git remote update",
    "git remote show origin",
    "git submodule update",
    "cat < /dev/tcp/127.0.0.1/80",
]

ALL = sorted(set(CODE_IN_ARGUMENTS + UNSEEN + OUTSIDE + NETWORK))


@pytest.fixture(scope="module")
def cwd(tmp_path_factory):
    return project(tmp_path_factory.mktemp("project"))


@pytest.mark.parametrize("command", sorted(set(CODE_IN_ARGUMENTS + UNSEEN + NETWORK)))
def test_is_not_read_only(command):
    assert not is_read_only_command(command), f"judged read-only: {command!r}"
    assert read_only_reason(command)


@pytest.mark.parametrize("command", ALL)
@pytest.mark.parametrize("mode", ["default", "plan"])
def test_does_not_run_without_asking(command, mode, cwd):
    d = decision(command, cwd, mode=mode)
    assert d.behavior != "allow", f"{command!r} runs unasked in {mode} mode ({d.reason})"


def test_the_tree_and_the_scan_agree_on_what_is_literal():
    # Single quotes and quoted heredocs keep substitution marks literal: these still only read.
    for command in [
        "grep '$(x)' f",
        "grep '`' f",
        "cat <<'EOF'\n$(id) `id`\nEOF",
        'echo "a\\`b"',
        "awk '{print $1}' f",
        "sed -n '/`/p' f",
    ]:
        assert is_read_only_command(command), (command, read_only_reason(command))


def test_a_classifier_crash_is_a_no_never_an_error(monkeypatch):
    import ipy_agent.tools.bash.verdict as verdict

    def boom(_cmd):
        raise RecursionError("deep")

    monkeypatch.setattr(verdict, "command_problem", boom)
    assert is_read_only_command("ls") is False


def test_a_permission_check_crash_asks(monkeypatch, tmp_path):
    import ipy_agent.tools.bash.tool as tool_mod

    def boom(*_a, **_k):
        raise ValueError("bug")

    monkeypatch.setattr(tool_mod, "leaves_working_dirs", boom)
    d = decision("ls", project(tmp_path))
    assert d.behavior == "ask" and "could not be checked" in d.reason


@pytest.mark.parametrize("command", ["ls .*", "cat .*/x", "cat ../*", "cat /etc/*", "cat *.lnk", "grep x ../*"])
def test_globs_are_judged_by_what_they_name(command, tmp_path):
    cwd = project(tmp_path / "p")
    (tmp_path / "secret").write_text("s")
    (cwd / "a.lnk").symlink_to(tmp_path / "secret")
    assert decision(command, cwd).behavior != "allow"
    assert decision("wc -l *.py src/*.py", cwd).behavior == "allow"


def test_a_glob_in_the_pattern_place_does_not_hide_the_file_after_it(tmp_path):
    cwd = project(tmp_path)
    for command in ["grep x* /etc/passwd", "grep *.nothing /etc/passwd", "sed p* /etc/passwd"]:
        assert decision(command, cwd).behavior != "allow", command


@pytest.mark.parametrize(
    "command",
    [
        # tree-sitter files words after a redirection under the redirection, where no check looked
        "cat </dev/null /etc/passwd",
        "cat >/dev/null /etc/shadow",
        "head 2>/dev/null /etc/passwd",
        "cat <<EOF /etc/passwd\nx\nEOF",
        # xargs handed names from a file's contents rather than from a listing
        "xargs cat < list",
        "cat list | xargs cat",
        "xargs -a list cat",
        "xargs --arg-file=list cat",
        "sort list | xargs head",
        # other processes' environments hold the API key
        "ps e",
        "ps auxe",
        "ps -eo pid,environ",
        # an option's detached value taken for grep's pattern
        "rg --ignore-file /etc/passwd foo",
        "grep --exclude-from /etc/passwd x f",
    ],
)
def test_more_holes_found_by_attacking(command, tmp_path):
    assert decision(command, project(tmp_path)).behavior != "allow"


def test_words_after_a_redirection_reach_deny_rules(tmp_path):
    cwd = project(tmp_path)
    (cwd / ".env").write_text("KEY=1")
    d = decision("cat </dev/null .env", cwd, mode="bypassPermissions", read_deny=("**/.env",))
    assert d.behavior == "deny"
    d = decision("git >/dev/null push --force", cwd, mode="bypassPermissions", deny=["Bash(git push:*)"])
    assert d.behavior == "deny"
