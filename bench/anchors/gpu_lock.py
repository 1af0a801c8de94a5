# lk.py -x|-s LOCKFILE CMD...: run CMD holding an exclusive / shared flock (util-linux flock may be absent).
import fcntl, subprocess, sys
f = open(sys.argv[2], "a"); fcntl.flock(f, fcntl.LOCK_EX if sys.argv[1] == "-x" else fcntl.LOCK_SH)
sys.exit(subprocess.call(sys.argv[3:]))
