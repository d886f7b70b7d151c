"""Warm starts: a process that has imported what a command needs once, and forks a child for each command.

A subagent in a pane or a detached worker is a `yeetui agent run` process of its own. Started from scratch it
spends most of its first two seconds importing (the Anthropic SDK alone is 1.7–1.9 s of CPU on a 2-core
machine) before it reads its run. A warm server (`server.WarmServer`, one per user and yeetui build) pays that
once; each worker command then connects to it (`client.forward`), hands over its stdin, stdout, stderr, working
directory, umask and environment (`protocol`), and the server forks a child that becomes the command
(`child.become`) — a fork costs a few milliseconds. The process that connected stays as the command's
stand-in: it passes on the signals it gets (`client.relay`) and ends as the command ended, with its exit
status or its signal; if it is killed outright the server kills the command too. So whoever started it —
tmux, `subprocess`, a test — sees what it saw before. Should the server die first, the command runs on (a
child whose parent died): the stand-in then waits for it (through a pidfd) and ends once it has, with status
1 — a tmux pane stays live, showing its output, as long as its worker runs.

The server is single-threaded (forking a process with threads copies locks some other thread holds), listens
on a socket in a private directory of this user (0700, checked, and each peer's uid checked too), holds an
exclusive lock on a file beside it while it lives (so two never serve one build: `files`), and ends after
`idle` seconds with no command running. The build key (`build.build_key`) names the interpreter, its search
path and the modification times of yeetui's sources and of the folders packages are installed in: an upgrade
or an edit starts a new server instead of forking stale code. What the key cannot see without importing it — a
file of an installed package edited in place — the server checks before each fork (`stale`: the mtimes and
sizes of the files its modules came from, `build.changed_file`); changed, it stops listening and tells the
client to ask again, which starts a new one.

The server forks outside any sandbox, so it refuses a peer that runs confined (`peers.confinement`:
no_new_privs, a seccomp filter it has not, a pid namespace of its own, capabilities dropped): a command an
agent's sandboxed bash starts must stay in that sandbox. Such a client does not even ask (`client.forward`) and
runs the command itself; nor does a client hand anything to a confined process listening in the server's
place. The command's environment (the provider keys among it) comes in a sealed memfd that only the forked
child reads: the server's own memory never holds it, and neither do the children it forks later.

The modules: `build` (which build a server serves, and when its code is stale), `files` (its socket and lock,
and what ended servers left), `protocol` (what travels on the socket), `client` (asking, and standing in for
the command), `server` (the loop that forks), `child` (the forked command's side). The package itself offers
what `yeetui doctor` asks: where this build's server would listen, and whether one runs.
"""

from yeetui.system.warm.files import Place, place, server_alive

__all__ = ["Place", "place", "server_alive"]
