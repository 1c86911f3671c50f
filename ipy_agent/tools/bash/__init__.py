"""The Bash tool and how it understands a command line before running it.

Modules import one way, each only from those above it in this list:
- `expansions`: values bash computes for single words (`$'...'`), and expansions that run code;
- `unseen`: substitutions the parser may not report, found in the source itself;
- `syntax`: the tree-sitter parse into simple commands, and line-wide problems;
- `options`: the option grammar of GNU tools and git;
- `wrappers`: programs that run another program (`env`, `timeout`, `xargs`...), looked through;
- `subject`: what a command means for permission rules (its parts and their spellings);
- `sed`, `awk`, `git`, `jq`, `readonly`: the allow-list of argument shapes that only read;
- `verdict`: the read-only verdict on a whole line;
- `core`: the few plain commands that run unasked where no sandbox can be made;
- `destructive`: warnings for commands that lose work for good;
- `deny`: Read deny rules applied to the paths a command names;
- `workdirs`: where a read-only line reads (inside the working directories, or it asks);
- `protected_writes`: commands that may write files deciding what runs (they always ask);
- `process`: running the command (process group, timeout, capped output, final directory);
- `seccomp`: the seccomp filter of the sandbox (no Unix sockets, io_uring or kernel keyring);
- `resources`: memory and process limits (a cgroup, or limits in the user namespace);
- `masks`: the paths Read deny rules cover on the live filesystem, for the sandbox to mask;
- `surface_mounts`: the protected surfaces under the writable directories, bound read-only
  (placeholders for the missing ones, removed when the command ends);
- `toolchain`: the directories holding the person's programs (PATH entries, what shims and
  launchers under HOME run, pyenv, conda, uv, the kernel's prefix), for the sandbox to show;
- `sandbox_launcher`: the script a root kernel's sandbox starts through (idmapped mounts, then down
  to an unprivileged user; the standard library only, for a quick start);
- `sandbox_user`: a root kernel's sandbox as an unprivileged user (the launcher's command line, the
  id-mapping namespace made once);
- `sandbox`: the bubblewrap sandbox: whether one can be made here, and its command line;
- `notes`: what the model and the person are told about it (failures, no sandbox, HOME, status);
- `contain`: which sandbox a command gets, by who approved it, and running it there;
- `logs`: reading a background command's log (new lines, a filter, the result limit);
- `background`: commands started in the background: their process groups, logs and reads;
- `tool`: the `BashTool` the runtime sees;
- `background_tools`: `BashOutput` and `KillShell`, for the commands in the background.
"""

from __future__ import annotations

from .background_tools import BashOutputTool, KillShellTool
from .tool import BashInput, BashOutput, BashTool

__all__ = ["BashInput", "BashOutput", "BashOutputTool", "BashTool", "KillShellTool"]
