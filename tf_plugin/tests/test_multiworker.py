"""Training that outgrows one process: tf.distribute.MultiWorkerMirroredStrategy
with two worker processes on localhost (TF_CONFIG, CPU) trains a small
MambaVision with the losses of a single process on the same global
batches, and resumes from its checkpoints after a worker is killed; Keras'
BackupAndRestore resumes a killed fit (one process)."""
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


def _start_workers(args, cluster):
    return [subprocess.Popen(args, env=_env({"cluster": cluster, "task": {"type": "worker", "index": i}}),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]


def _run_workers(args):
    """Runs args as two workers on free localhost ports; their stdouts
    (each must exit 0)."""
    procs = _start_workers(args, {"worker": ["localhost:%d" % p for p in _free_ports(2)]})
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
    return outs


def test_two_workers_match_one_process():
    args = [sys.executable, SCRIPT, str(STEPS), str(GLOBAL_BATCH)]
    single = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=300)
    assert single.returncode == 0, single.stderr[-3000:]
    want = _losses(single.stdout)

    outs = _run_workers(args)
    got = [_losses(o) for o in outs]
    # both workers report the same (all-reduced) losses, equal to the single
    # process's up to the order of the sums
    np.testing.assert_allclose(got[0], got[1], rtol=0, atol=0)
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)
    # and training moved: the loss of the last step differs from the first
    assert abs(want[-1] - want[0]) > 1e-4, want


def _step_losses(output):
    """{step: loss} of the "LOSS step value" lines."""
    out = {}
    for line in output.splitlines():
        if line.startswith("LOSS "):
            _, step, value = line.split()
            out[int(step)] = float(value)
    return out


def test_killed_worker_resumes_from_checkpoint(tmp_path):
    """Worker 1 dies right after step 1 is saved; worker 0 cannot go on and
    is stopped. Both start again on the same checkpoint folder, resume at
    step 2 and finish; the losses of all steps equal an uninterrupted
    single process's."""
    ckpt = os.path.join(str(tmp_path), "ckpt")
    single = subprocess.run([sys.executable, SCRIPT, str(STEPS), str(GLOBAL_BATCH)], env=_env(),
                            capture_output=True, text=True, timeout=300)
    assert single.returncode == 0, single.stderr[-3000:]
    want = _losses(single.stdout)

    args = [sys.executable, SCRIPT, str(STEPS), str(GLOBAL_BATCH), ckpt]
    cluster = {"worker": ["localhost:%d" % p for p in _free_ports(2)]}
    procs = _start_workers(args + ["1"], cluster)
    out1, err1 = procs[1].communicate(timeout=300)
    assert procs[1].returncode == 3, err1[-3000:]  # the simulated crash
    try:
        out0, _ = procs[0].communicate(timeout=20)
    except subprocess.TimeoutExpired:  # blocked in the next all-reduce
        procs[0].kill()
        out0, _ = procs[0].communicate()
    first = _step_losses(out0)
    assert sorted(first)[:2] == [0, 1], out0[-2000:]

    outs = _run_workers(args)
    resumed = _step_losses(outs[0])
    assert sorted(resumed) == list(range(2, STEPS)), "did not resume at step 2: %s" % sorted(resumed)
    got = [first[0], first[1]] + [resumed[s] for s in range(2, STEPS)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_backup_and_restore_resumes_fit(tmp_path):
    """keras.callbacks.BackupAndRestore with fit (one process; Keras 3's
    fit does not run under MultiWorkerMirroredStrategy): killed at the end
    of epoch 1, started again, it resumes at epoch 2 and ends with the
    variables and losses of an uninterrupted run."""
    script = os.path.join(HERE, "backup_restore_fit.py")
    epochs = 4

    def run(backup, *extra):
        return subprocess.run([sys.executable, script, str(epochs), backup] + list(extra), env=_env(),
                              capture_output=True, text=True, timeout=300)

    whole = run(os.path.join(str(tmp_path), "whole"))
    assert whole.returncode == 0, whole.stderr[-3000:]
    backup = os.path.join(str(tmp_path), "backup")
    crashed = run(backup, "1")
    assert crashed.returncode == 3, crashed.stderr[-3000:]
    resumed = run(backup)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    want, first, second = (_step_losses(p.stdout) for p in (whole, crashed, resumed))
    assert sorted(first) == [0, 1] and sorted(second) == [2, 3], (sorted(first), sorted(second))
    got = [first[0], first[1], second[2], second[3]]
    np.testing.assert_allclose(got, [want[e] for e in range(epochs)], rtol=1e-5, atol=1e-6)

    def total(p):
        return float([l for l in p.stdout.splitlines() if l.startswith("SUM ")][0].split()[1])
    np.testing.assert_allclose(total(resumed), total(whole), rtol=1e-6)
