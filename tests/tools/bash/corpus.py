"""Commands with the verdict Bash's classifier must give: read-only (True) or not (False).

Kept as data so adding a case is one line. The write cases include the sneaky ones: writes hidden
in substitutions, redirections, wrappers, flags that look harmless, and globs or expansions that
could become flags.
"""

READ_ONLY: list[str] = [
    "ls", "ls -la", "ls -la src", "ls *", "ls src/*.py", "pwd", "echo hello", "echo 'a b' \"c\"",
    "echo $HOME", "echo {a,b}", "printf '%s\\n' a b", "cat README.md", "cat a b | wc -l",
    "head -n 20 file.txt", "tail -n 50 log.txt", "tail -f log.txt", "wc -l *.py", "grep -rn TODO src",
    "grep -r 'def main' . --include='*.py'", "rg -n foo", "rg --files", "rg -l 'x' src | head",
    "find . -name '*.py'", "find . -type f -newer setup.py", "find src -maxdepth 2 -print",
    "sed -n '1,20p' file", "sed 's/a/b/g' file", "sed -e 's/x/y/' -e '/^#/d' f", "sed -n '/start/,/end/p' f",
    "sed 's/w/W/' f", "sed -E 's/(a)|(b)/\\1/g' f", "sort file", "sort -u -k2,2 file", "sort -k1o x",
    "sort -t, -k3 -n data.csv", "uniq", "uniq -c file", "sort f | uniq -c | sort -rn | head",
    "diff a b", "diff -u old new", "cmp a b", "stat file", "file image.png", "du -sh .", "df -h",
    "which python", "type ls", "date", "date +%Y-%m-%d", "date -d yesterday +%s", "uname -a", "id",
    "whoami", "env", "printenv PATH", "basename /a/b.txt .txt", "dirname /a/b", "realpath x",
    "readlink -f x", "tree", "tree -L 2 src", "jq . data.json", "jq -r '.name' package.json",
    "git status", "git status --short", "git diff", "git diff --stat HEAD~3", "git diff --cached",
    "git log --oneline -n 20", "git log -p -- src/a.py", "git show HEAD", "git show HEAD:README.md",
    "git blame -L 10,20 a.py", "git ls-files", "git rev-parse HEAD", "git rev-parse --abbrev-ref HEAD",
    "git branch", "git branch -a", "git branch -r", "git branch --list 'feat*'", "git branch -vv",
    "git tag", "git tag -l 'v1.*'", "git remote -v", "git remote", "git describe --tags",
    "git shortlog -sn", "git grep -n foo", "git config --get user.name", "git config --list",
    "git config -l --show-origin", "git stash list", "git --no-pager log -1", "git -C sub status",
    "git log --format='%H %s'", "git diff --output-indicator-new=+", "git --version",
    "python --version", "python3 -V", "node --version", "npm --version", "awk '{print}' f",
    "true", "false", "test -f setup.py", "[ -d src ]", "[[ -f x && -d y ]]", "cd src", "cd src && ls",
    "cd .. && pwd", "find . -name '*.py' | xargs wc -l", "find . -print0 | xargs -0 grep -l foo",
    "xargs -n 1 echo", "ls | xargs -I {} echo {}", "grep foo file > /dev/null", "ls 2>/dev/null",
    "ls nonexistent 2>&1", "ls 2>&1 | head", "grep -q x f && echo yes || echo no", "cat <<< 'hello'",
    "grep x <<< \"$VAR\"", "(cd src && ls)", "{ ls; pwd; }", "! grep -q x f", "ls # list files",
    "LANG=C sort file", "LC_ALL=C ls", "command -v git", "timeout 10 ls", "nice ls",
    "cat <<'EOF'\nhello $(not run)\nEOF", "ls &> /dev/null", "echo x >/dev/null 2>&1",
    "git log --oneline | grep fix | head -5", "wc -c < file.txt", "seq 1 10", "sleep 1",
    "ps aux", "sha256sum file", "base64 file", "nl file", "cut -d, -f1 data.csv", "tr a-z A-Z < f",
    "echo $'\\x72m'",
    # wrappers, reflog/stash, expansions and hostname flags that only read (review 3)
    "time ls", "time -p ls", "git stash show -p", "git reflog --date=iso", "git reflog show HEAD",
    "echo $((1 + 2))", "echo ${HOME:-/tmp}", "echo ${#HOME}", "echo ${HOME: -3}", "echo ${arr[0]}",
    "[[ 3 -gt 2 ]]", "[[ -v HOME ]]", "test -v HOME", "hostname", "hostname -f", "hostname -I --short",
    "cat $'README.md'", "TZ=UTC date",
]

WRITES: list[str] = [
    # plain writes
    "rm x", "rm -rf build", "mv a b", "cp a b", "mkdir x", "touch x", "chmod +x f", "ln -s a b",
    "tee f", "echo x | tee -a log", "npm install", "pip install requests", "make", "pytest",
    "git add .", "git commit -m x", "git push", "git push --force", "git pull", "git fetch",
    "git checkout main", "git checkout -- .", "git reset --hard", "git clean -fd", "git merge x",
    "git rebase main", "git stash", "git stash pop", "git stash drop", "git branch new-feature",
    "git branch -D old", "git branch -m a b", "git tag v1.0", "git tag -d v1", "git remote add o url",
    "git config user.name x", "git config --unset x", "git worktree add ../w", "git reflog expire --all",
    # redirections
    "echo x > f", "echo x >> f", "> f", "ls > out.txt", "cat a &>f", "ls &>> log", "ls >& out",
    "cat <<EOF > f\nhi\nEOF", "ls >| f", "cat a 1<>f", "echo hi > /dev/null; echo x > f",
    "ls | grep x > matches.txt",
    # flags that write
    "sed -i 's/a/b/' f", "sed -i.bak 's/a/b/' f", "sed --in-place 's/a/b/' f", "sed -ni p f",
    "sed --in-pl=.b 's/a/b/' f", "sed 's/a/b/w out' f", "sed '1w out' f", "sed 's/x/date/e' f",
    "sed -f script.sed f", "sed 'e ls' f", "find . -delete", "find . -name '*.pyc' -delete",
    "find . -exec rm {} \\;", "find . -execdir touch x \\;", "find . -ok rm {} \\;",
    "find . -fprint out", "find . -fls out", "find . -fprintf out '%p'", "find . -{delete,print}",
    "find . $ACTION", "find *", "sort -o out f", "sort --output=out f", "sort -uo out f",
    "sort --out=f x", "sort --compress-program=sh f", "uniq in out", "printf -v x '%s' y",
    "date -s '2020-01-01'", "date 0101", "tree -o out.txt", "file -C -m magic", "jq -f prog.jq x",
    "jq --rawfile a f .", "rg --pre ./decompress x", "rg --pre=sh x", "env rm x", "env -S 'rm x'",
    "git -c core.pager=rm log", "git -c alias.x=!rm x", "git diff --output=f", "git log --out=f",
    "git grep -O foo", "git grep --open-files-in-pager=vim foo", "git branch -d x",
    "git remote set-url origin x", "git config --add a b", "git stash clear",
    # hidden commands
    "echo $(rm x)", "echo `rm x`", "cat <(rm x)", "ls > >(tee f)", "echo \"$(touch f)\"",
    "ls; rm x", "ls && rm x", "ls || rm x", "ls | sh", "cat f | bash", "ls & rm x",
    "x=$(rm y)", "cat <<EOF\n$(rm x)\nEOF", "(cd src && rm x)", "{ ls; rm x; }",
    "for f in *; do rm $f; done", "while true; do ls; done", "if true; then rm x; fi",
    "f() { rm x; }; f", "$CMD args", "${CMD} args", "\"$CMD\" args",
    # wrappers and interpreters
    "xargs rm", "find . | xargs rm -f", "xargs -I {} mv {} {}.bak", "find . -print | xargs sed -i s/a/b/",
    "command rm x", "builtin eval ls", "eval ls", "exec rm x", "sudo ls", "nohup ls",
    "timeout 5 rm x", "nice rm x", "time rm x", "awk '{system(\"rm x\")}' f",
    # rustup's cargo may install the toolchain the project pins before printing its version
    "cargo --version",
    "bash -c 'ls'", "sh -c ls", "python -c 'print(1)'", "python script.py", "node -e '1'",
    "perl -e 1", "./script.sh", "/bin/rm x", "/bin/ls", "source env.sh", ". env.sh",
    # environment that changes what runs
    "FOO=1 ls", "PATH=. ls", "GIT_EXTERNAL_DIFF=rm git diff", "LD_PRELOAD=x.so ls", "export A=1",
    "PAGER=rm git log", "x=1",
    # odd syntax
    "cat 'unterminated", "ls (", "find . -del\\\nete", "test -v 'a[$(rm x)]'", "[ 'a[$(rm x)]' -eq 1 ]",
    "$'\\x72m' x", "dd if=/dev/zero of=f", "truncate -s 0 f", "shred f", "chmod -R 777 .",
    "curl -o f https://example.com", "wget https://example.com", "docker run x", "kill 1",
    "crontab -r", "hostname newname", "git apply p.diff", "patch -p1 < p.diff",
    # review 3: `time` writes with -o/-a; stash and reflog take --output
    "\\time -o out ls", "command time -o out ls", "nice time --output=out ls", "time -ao out ls",
    "time --append --output=out ls", "git stash list --output=out", "git stash show --output=out",
    "git reflog show --output=out", "git reflog --output=out", "git config set -l a.b c",
    # arithmetic and prompt expansion run the command a variable's value holds
    "TZ='a[$(touch p)]'; echo $((TZ))", "echo $((TZ))", "echo $[TZ]", "echo $((x+1))",
    "TZ='$(touch p)'; echo ${TZ@P}", "echo ${x@E}", "echo ${x@Q}", "echo ${NO_COLOR:NO_COLOR}",
    "echo ${HOME:0:n}", "echo ${a[TZ]}", "echo ${!ref}", "[[ $TZ -eq 1 ]]", "[[ 1 -eq TZ ]]",
    "[[ -f x && $n -lt 3 ]]", "[[ -v $X ]]", "test -v \"$X\"", "[ -v 'a[i]' ]", "TZ='a[$(touch p)]'",
    "TZ='`touch p`'", "TZ='$((1))' ls",
    # hostname sets the name unless it is only asked to show it
    "hostname -Fx", "hostname --file=/etc/hostname", "hostname -b", "hostname -F /etc/hostname",
]

# Commands whose destructive flag must be raised, and a few that must not.
DESTRUCTIVE: list[str] = [
    "rm -rf build", "rm -fr x", "rm -r x", "sudo rm -rf /", "git push --force", "git push -f origin main",
    "git push --force-with-lease", "git push origin +main", "git reset --hard HEAD~1", "git clean -fd",
    "git checkout -- .", "git branch -D old", "dd if=/dev/zero of=/dev/sda", "mkfs.ext4 /dev/sdb1",
    "shred -u secret", "chmod -R 000 .", "find . -name '*.tmp' -delete", "truncate -s 0 log",
    "find . | xargs rm -rf", "bash -c 'rm -rf x'", "ls && rm -rf x", "echo $(rm -rf x)",
]
NOT_DESTRUCTIVE: list[str] = [
    "rm x", "git push", "git push origin main", "git reset HEAD file", "git clean -n", "ls -la",
    "git checkout main", "git branch -d merged", "chmod +x f", "find . -name x",
]
