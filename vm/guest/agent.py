#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""In-guest command agent for the sroce QEMU rig.

Speaks JSON lines over a virtio-serial port. Each request carries an "id" and
an "op"; each reply echoes the id. Ops:
  ping                          -> {}
  run    cmd, timeout[, reap_wait] -> rc, out, err (rc 124 on timeout; "stuck" when
                                   the killed command could not be reaped in
                                   reap_wait s, REAP_WAIT by default)
  spawn  cmd                    -> handle          (runs in the background)
  poll   handle                 -> done, rc, out, err (out/err only when done)
  kill   handle, sig            -> {}
  blocked                       -> tasks   (every task in state D, with its kernel stack)
  kmsg   text                   -> {}      (text written to /dev/kmsg: one log record)
  listening port                -> listening (a TCP socket of the agent's network
                                   namespace listens on port, IPv4 or IPv6)
  read   paths | glob           -> files {path: text}, errors {path: strerror}
  poweroff                      -> {} then the guest powers off
kmsg, listening and read are done by the agent itself: no shell, no fork, a few
milliseconds where a command takes a tenth of a second or more under TCG.
Commands run under /bin/bash -c in their own process group, so a timeout kills
everything they started. A command that is one program with plain arguments
(no shell syntax at all: see plain_argv) is started without bash, as bash
itself would run it (bash -c execs a lone simple command in its own place):
bash's start-up costs about a tenth of a second under TCG, and the suites run
thousands of such commands. A command that cannot die (a task stuck in the kernel,
state D) is given up on after REAP_WAIT seconds: the reply says so and carries
the stuck tasks' kernel stacks, and the agent goes on serving requests.
"""
import errno
import glob
import json
import os
import re
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import time

PORT_NAME = "sroce.agent"
REAP_WAIT = 10


def find_port():
    base = "/sys/class/virtio-ports"
    for _ in range(200):
        if os.path.isdir(base):
            for p in os.listdir(base):
                try:
                    with open(os.path.join(base, p, "name")) as f:
                        if f.read().strip() == PORT_NAME:
                            return "/dev/" + p
                except OSError:
                    pass
        time.sleep(0.05)
    sys.exit("agent: no virtio port named " + PORT_NAME)


def task_stacks(keep):
    """'task PID (COMM) state S:' and the kernel stack of every task whose
    /proc/PID/stat fields after the command name (state first) keep() accepts."""
    lines = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
            fields = stat.rsplit(")", 1)[1].split()
            if not keep(fields):
                continue
            with open("/proc/%s/stack" % pid) as f:
                stack = f.read()
        except (OSError, ValueError, IndexError):
            continue
        lines.append("task %s %s state %s:\n%s" % (pid, stat.split(" ", 2)[1], fields[0],
                                                   stack))
    return "".join(lines)


def tcp_listening(port):
    """True if a TCP socket listens on port (any address, IPv4 or IPv6), as
    /proc/net/tcp{,6} of the agent's network namespace show it."""
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    # local_address is ADDR:PORT in hex; state 0A is LISTEN
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except (OSError, StopIteration):
            pass
    return False


def read_files(paths):
    """({path: text}, {path: strerror}) for the given paths."""
    files, errors = {}, {}
    for path in paths:
        try:
            with open(path, errors="replace") as f:
                files[path] = f.read()
        except OSError as e:
            errors[path] = e.strerror or str(e)
    return files, errors


# Bash's builtins and reserved words (compgen -b -k): a command that starts with
# one of them needs bash, even where a program of that name exists too.
BASH_WORDS = frozenset("""
. : [ alias bg bind break builtin caller cd command compgen complete compopt continue
declare dirs disown echo enable eval exec exit export false fc fg getopts hash help
history jobs kill let local logout mapfile popd printf pushd pwd read readarray
readonly return set shift shopt source suspend test times trap true type typeset
ulimit umask unalias unset wait if then else elif fi case esac for select while until
do done in function time { } ! [[ ]] coproc
""".split())
# Characters whose meaning bash and a plain split could disagree on: every
# operator, expansion, glob, comment, escape and line break is left out.
PLAIN = re.compile(r"[A-Za-z0-9_./:=,+%@^ '\"-]*")


def plain_argv(cmd):
    """The argv bash would exec for cmd if cmd is one program with plain
    arguments: only letters, digits, spaces, quotes and _./:=,+%@^- (no $, `,
    backslash, redirection, pipe, list, glob, tilde, brace or comment), a first
    word that is a program name, neither an assignment nor a bash builtin or
    reserved word. Else None: bash runs it."""
    if not PLAIN.fullmatch(cmd):
        return None
    try:
        argv = shlex.split(cmd)
    except ValueError:
        return None
    if not argv or "=" in argv[0] or argv[0] in BASH_WORDS or not argv[0]:
        return None
    return argv


class Job:
    def __init__(self, cmd):
        self.out = tempfile.TemporaryFile()
        self.err = tempfile.TemporaryFile()
        argv = plain_argv(cmd)
        if argv:
            try:
                self.proc = self._popen(argv)
                return
            except OSError as e:
                # ENOEXEC (a file without a #! line): bash runs it as a script of
                # its own. Otherwise what bash says and returns for a program it
                # cannot find or run.
                if e.errno != errno.ENOEXEC:
                    missing = isinstance(e, FileNotFoundError)
                    self.err.write(("bash: line 1: %s: %s\n" % (
                        argv[0], "command not found" if missing and "/" not in argv[0]
                        else e.strerror)).encode())
                    cmd = "exit %d" % (127 if missing else 126)
        self.proc = self._popen(["/bin/bash", "-c", cmd])

    def _popen(self, argv):
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.out,
                                stderr=self.err, start_new_session=True)

    def wait(self, timeout):
        """Wait for the command to exit (subprocess.TimeoutExpired after timeout
        s). Popen.wait(timeout) polls, sleeping up to 50 ms between looks, which
        every command's answer paid; a pidfd says at once when it exits."""
        try:
            pidfd = os.pidfd_open(self.proc.pid)
        except OSError:  # already reaped, or no pidfd support: poll as Popen does
            return self.proc.wait(timeout=timeout)
        try:
            p = select.poll()
            p.register(pidfd, select.POLLIN)
            if not p.poll(None if timeout is None else max(0, timeout) * 1000):
                raise subprocess.TimeoutExpired(self.proc.args, timeout)
        finally:
            os.close(pidfd)
        return self.proc.wait()

    def kill(self, sig=signal.SIGKILL):
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def stuck_tasks(self):
        """State and kernel stack of every task left in the job's process group."""
        return task_stacks(lambda fields: int(fields[2]) == self.proc.pid)  # pgrp

    def result(self):
        self.out.seek(0)
        self.err.seek(0)
        return {"rc": self.proc.returncode,
                "out": self.out.read().decode(errors="replace"),
                "err": self.err.read().decode(errors="replace")}


def main():
    # init.sh starts the agent in the background of a non-interactive shell,
    # which ignores SIGINT and SIGQUIT for it; every job would inherit that and
    # shrug off a Proc.kill(SIGINT) (ibv_asyncwatch, for one). Jobs get the
    # dispositions a program started from a terminal has.
    for sig in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)
    path = find_port()
    fd = os.open(path, os.O_RDWR)
    rfile = os.fdopen(fd, "rb", buffering=0)
    jobs = {}
    stuck = []  # killed run jobs that never exited: kept, never waited for again
    next_handle = 1

    def send(obj):
        data = (json.dumps(obj) + "\n").encode()
        while data:
            n = os.write(fd, data)
            data = data[n:]

    send({"id": 0, "ready": True})
    buf = b""
    while True:
        chunk = rfile.read(65536)
        if not chunk:
            time.sleep(0.05)
            continue
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            try:
                req = json.loads(line)
            except ValueError:
                continue
            rid = req.get("id")
            op = req.get("op")
            reply = {"id": rid}
            if op == "ping":
                pass
            elif op == "run":
                job = Job(req["cmd"])
                try:
                    job.wait(req.get("timeout", 60))
                    reply.update(job.result())
                except subprocess.TimeoutExpired:
                    job.kill()
                    try:
                        job.wait(req.get("reap_wait", REAP_WAIT))
                        reply.update(job.result())
                    except subprocess.TimeoutExpired:
                        reply.update(job.result())
                        reply["stuck"] = True
                        reply["err"] = ("agent: killed command cannot be reaped\n" +
                                        job.stuck_tasks() + reply["err"])
                        stuck.append(job)
                    reply["rc"] = 124
                    reply["timeout"] = True
            elif op == "blocked":
                reply["tasks"] = task_stacks(lambda fields: fields[0] == "D")
            elif op == "kmsg":
                try:
                    with open("/dev/kmsg", "w") as f:
                        f.write(req["text"])
                except OSError as e:
                    reply["error"] = "/dev/kmsg: %s" % e
            elif op == "listening":
                reply["listening"] = tcp_listening(int(req["port"]))
            elif op == "read":
                paths = req["paths"] if "paths" in req else sorted(glob.glob(req["glob"]))
                reply["files"], reply["errors"] = read_files(paths)
            elif op == "write":
                try:
                    with open(req["path"], "w") as f:
                        f.write(req["text"])
                except OSError as e:
                    reply["error"] = "%s: %s" % (req["path"], e.strerror or e)
            elif op == "spawn":
                jobs[next_handle] = Job(req["cmd"])
                reply["handle"] = next_handle
                next_handle += 1
            elif op == "poll":
                job = jobs.get(req["handle"])
                if job is None:
                    reply["error"] = "no such handle"
                elif job.proc.poll() is None:
                    reply["done"] = False
                else:
                    reply["done"] = True
                    reply.update(job.result())
                    del jobs[req["handle"]]
            elif op == "kill":
                job = jobs.get(req["handle"])
                if job is not None:
                    job.kill(req.get("sig", signal.SIGKILL))
            elif op == "poweroff":
                send(reply)
                os.sync()
                with open("/proc/sysrq-trigger", "w") as f:
                    f.write("o")
                time.sleep(60)
                continue
            else:
                reply["error"] = "unknown op %r" % op
            send(reply)


if __name__ == "__main__":
    main()
