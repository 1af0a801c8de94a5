"""tf.distribute.MultiWorkerMirroredStrategy with two worker processes on
localhost (TF_CONFIG, CPU) trains a small MambaVision: its losses equal a
single process's on the same global batches."""
import json
import os
import socket
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "multiworker_train.py")
STEPS, GLOBAL_BATCH = 4, 8


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _losses(output):
    for line in output.splitlines():
        if line.startswith("LOSSES "):
            return json.loads(line[len("LOSSES "):])
    raise AssertionError("no LOSSES line in:\n" + output[-3000:])


def _env(tf_config=None):
    env = dict(os.environ)
    env.pop("TF_CONFIG", None)
    if tf_config is not None:
        env["TF_CONFIG"] = json.dumps(tf_config)
    return env


def test_two_workers_match_one_process():
    args = [sys.executable, SCRIPT, str(STEPS), str(GLOBAL_BATCH)]
    single = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=300)
    assert single.returncode == 0, single.stderr[-3000:]
    want = _losses(single.stdout)

    cluster = {"worker": ["localhost:%d" % p for p in _free_ports(2)]}
    procs = [subprocess.Popen(args, env=_env({"cluster": cluster, "task": {"type": "worker", "index": i}}),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err[-3000:]
            outs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    got = [_losses(o) for o in outs]
    # both workers report the same (all-reduced) losses, equal to the single
    # process's up to the order of the sums
    np.testing.assert_allclose(got[0], got[1], rtol=0, atol=0)
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)
    # and training moved: the loss of the last step differs from the first
    assert abs(want[-1] - want[0]) > 1e-4, want
