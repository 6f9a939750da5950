"""Hostile ONNX files: each must make `ztfs check` exit non-zero naming its
rule in stderr. Written with onnx's helper and protobuf's serializer where
the break is expressible there (duplicate names, wrong lengths, external
data entries), by byte edits where it is not (a broken protobuf). What
onnx itself makes of each (load, check_model(full_check=True), to_array)
is printed beside it: where it differs from a refusal, the suite says so.

A file whose external data leads out of the model's folder (an absolute
location, `..`, a symlink in the folder) points at a secret file outside
it: its bytes must appear in nothing ztfs prints or serves.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import onnx
from onnx import TensorProto as T, external_data_helper as edh, helper, numpy_helper

from . import oracle, wire
from ..mount import mounted
from ..results import Results, short

SECRET_LEN = 64


@dataclasses.dataclass
class Hostile:
    label: str
    path: str
    rule: str
    what: str
    secret: bytes = b""  # bytes that must never be served


def base_graph(inits, nodes=()):
    vi = helper.make_tensor_value_info
    nodes = [*nodes, helper.make_node("Identity", ["x"], ["y"])]
    return helper.make_graph(nodes, "g", [vi("x", T.FLOAT, [1])], [vi("y", T.FLOAT, [1])], inits)


def make(inits, nodes=()) -> onnx.ModelProto:
    """A model that is not checked: the point is that it is broken."""
    return helper.make_model(base_graph(inits, nodes), producer_name="ztfs-interop-hostile")


def w(values=(1.0, 2.0, 3.0, 4.0), name="w"):
    return numpy_helper.from_array(np.array(values, np.float32), name)


def external(name: str, location: str, dims, dtype=T.FLOAT, offset=None, length=None):
    t = T(name=name, data_type=dtype, dims=list(dims), raw_data=b"")
    edh.set_external_data(t, location, offset=offset, length=length)
    t.ClearField("raw_data")
    return t


def write(outdir: str, label: str, m, data: dict = None) -> str:
    """Serializes `m` (protobuf's own serializer, no external-data pass) to
    OUTDIR/LABEL/model.onnx, with the files of `data` beside it."""
    d = os.path.join(outdir, label)
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "model.onnx")
    with open(p, "wb") as f:
        f.write(m if isinstance(m, bytes) else m.SerializeToString())
    for name, b in (data or {}).items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(b)
    return p


def hostile(outdir: str, rng) -> list:
    out = []

    def add(label, rule, what, m, data=None, secret=b""):
        out.append(Hostile(label, write(outdir, label, m, data), rule, what, secret))

    const = helper.make_node("Constant", [], ["w"], value=w((5.0, 6.0), ""))
    add("dup_init", "OnnxDuplicate", "two initializers named 'w'", make([w(), w()]))
    add("dup_const", "OnnxDuplicate", "an initializer and a Constant output named 'w'",
        make([w()], [const]))

    vi = helper.make_tensor_value_info
    then_g = helper.make_graph([helper.make_node("Identity", ["w"], ["t"])], "then", [],
                               [vi("t", T.FLOAT, [4])], [w(name="w")])
    shadow = make([w()], [helper.make_node("If", ["c"], ["o"], then_branch=then_g,
                                           else_branch=then_g)])
    shadow.graph.input.append(vi("c", T.BOOL, []))
    add("dup_shadow", "OnnxDuplicate", "a then-branch initializer 'w' shadowing the graph's",
        shadow)
    sparse = make([w()])
    sparse.graph.sparse_initializer.append(helper.make_sparse_tensor(
        w((1.0,), "w"), numpy_helper.from_array(np.array([0], np.int64), "i"), [4]))
    add("dup_sparse", "OnnxDuplicate", "a sparse initializer named as an initializer 'w'",
        sparse)

    short_raw = w()
    short_raw.raw_data = short_raw.raw_data[:-1]
    add("raw_short", "OnnxLength", "raw_data 15 bytes for 4 floats", make([short_raw]))
    long_raw = w()
    long_raw.raw_data += b"\0\0\0\0"
    add("raw_long", "OnnxLength", "raw_data 20 bytes for 4 floats", make([long_raw]))
    few = T(name="w", data_type=T.FLOAT, dims=[4], float_data=[1, 2, 3])
    add("typed_few", "OnnxLength", "float_data 3 values for dims [4]", make([few]))
    many = T(name="w", data_type=T.INT64, dims=[2], int64_data=[1, 2, 3])
    add("typed_many", "OnnxLength", "int64_data 3 values for dims [2]", make([many]))
    cplx = T(name="w", data_type=T.COMPLEX64, dims=[2], float_data=[1, 2, 3])
    add("typed_complex_odd", "OnnxLength", "COMPLEX64 [2] with 3 floats (needs 4)", make([cplx]))
    data16 = np.arange(4, dtype=np.float32).tobytes()
    add("ext_length", "OnnxLength", "external length 12 for 4 floats (16 bytes)",
        make([external("w", "w.bin", [4], offset=0, length=12)]), {"w.bin": data16})

    add("ext_range", "OnnxExternalRange", "external offset 8 + length 16 in a 16-byte file",
        make([external("w", "w.bin", [4], offset=8, length=16)]), {"w.bin": data16})
    add("ext_offset", "OnnxExternalRange", "external offset 4096 in a 16-byte file",
        make([external("w", "w.bin", [4], offset=4096)]), {"w.bin": data16})
    add("ext_missing", "OnnxExternalMissing", "external file absent",
        make([external("w", "missing.bin", [4])]))

    # The secret lives beside the models' folders, never inside one.
    secret = rng.bytes(SECRET_LEN)
    secret_path = os.path.join(outdir, "secret.bin")
    with open(secret_path, "wb") as f:
        f.write(secret)
    ext = lambda loc: make([external("secret", loc, [SECRET_LEN // 4])])  # noqa: E731
    add("path_absolute", "OnnxExternalPath", "location the absolute path of a file outside",
        ext(os.path.abspath(secret_path)), secret=secret)
    add("path_dotdot", "OnnxExternalPath", "location ../secret.bin", ext("../secret.bin"),
        secret=secret)
    add("path_symlink", "OnnxExternalPath", "location link.bin, a symlink to ../secret.bin",
        ext("link.bin"), secret=secret)
    os.symlink("../secret.bin", os.path.join(outdir, "path_symlink", "link.bin"))
    add("path_dirlink", "OnnxExternalPath", "location sub/secret.bin, sub a symlink to ..",
        ext("sub/secret.bin"), secret=secret)
    os.symlink("..", os.path.join(outdir, "path_dirlink", "sub"))
    passwd = open("/etc/passwd", "rb").read()[:32] if os.path.exists("/etc/passwd") else b""
    if len(passwd) == 32:
        add("path_passwd", "OnnxExternalPath", "location /etc/passwd",
            make([external("secret", "/etc/passwd", [32], dtype=T.UINT8)]), secret=passwd)

    good = make([w(), numpy_helper.from_array(np.arange(3, dtype=np.int64), "ids")]) \
        .SerializeToString()
    add("pb_truncated", "OnnxProtobuf", "the file cut in half", good[: len(good) // 2])
    assert good[0] == 0x08  # ir_version, field 1, varint
    add("pb_wire7", "OnnxProtobuf", "first tag made wire type 7", b"\x0f" + good[1:])
    add("pb_field0", "OnnxProtobuf", "first tag made field 0", b"\x00" + good[1:])
    add("pb_len_past_end", "OnnxProtobuf", "a length prefix past the end",
        good + wire.tag(14, 2) + wire.varint(1 << 20) + b"abc")
    tag_at, body_at, n = wire.field_len_at(good, 7)
    inner = good[body_at: body_at + n] + wire.tag(5, 2) + wire.varint(1 << 16) + b"xyz"
    add("pb_inner_len", "OnnxProtobuf", "an initializer's length past its graph's end",
        good[:tag_at] + wire.field_len(7, inner) + good[body_at + n:])

    nograph = make([w()])
    nograph.ClearField("graph")
    add("model_no_graph", "OnnxModel", "a ModelProto with no graph", nograph)
    neg = T(name="w", data_type=T.FLOAT, dims=[-1, 4], raw_data=data16)
    add("model_negative_dim", "OnnxModel", "dims [-1, 4]", make([neg]))
    huge = T(name="w", data_type=T.FLOAT, dims=[2**62, 2**62], raw_data=b"")
    add("model_dims_overflow", "OnnxModel", "dims [2^62, 2^62]: the product overflows",
        make([huge]))
    add("model_nameless", "OnnxModel", "an initializer with no name", make([w(name="")]))
    return out


def check_hostile(h: Hostile, z, res: Results, verdicts: list):
    where = f"onnx refused {h.label}"
    rc, _, err = z.run("check", [h.path])
    text = err.decode("utf-8", "replace")
    res.check(rc != 0 and h.rule in text, where,
              f"{h.what}: `ztfs check` exited {rc}, expected non-zero naming {h.rule}: {short(err)}")
    verdicts.append(f"  {h.label} ({h.what}): onnx: {oracle.verdict(h.path)}")
    if h.secret:
        check_secret(h, z, res, where)


def check_secret(h: Hostile, z, res: Results, where: str):
    """No output of any command, and no file of a mount (should one come
    up), holds the secret's bytes."""
    outputs = {}
    for sub, args in (("check", [h.path]), ("manifest", [h.path]), ("ls", [h.path]),
                      ("cat", [h.path, "secret"])):
        rc, out, err = z.run(sub, args)
        outputs[f"ztfs {sub}"] = out + err
    rc, out, err = z.run("cat", [h.path, "secret"], ("--values",))
    outputs["ztfs cat --values"] = out + err
    with mounted(z, h.path, res, where) as (rc, err, mnt):
        if rc == 0:
            res.fail(where, f"{h.what}: `ztfs mount` of it succeeded")
            for d, _, files in os.walk(mnt):
                for f in files:
                    try:
                        with open(os.path.join(d, f), "rb") as fh:
                            outputs[f"mount {f}"] = fh.read(1 << 24)
                    except OSError:
                        pass
    leaked = [k for k, v in outputs.items() if h.secret in v or h.secret[:16] in v]
    res.check(not leaked, where, f"{h.what}: the secret's bytes appear in {leaked}")
