"""Regenerates the pyhurray-written files in this directory.

python3 -m venv venv && venv/bin/pip install pyhurray==0.1.0 numpy
venv/bin/python gen.py
"""
import struct
import numpy as np
import hurray as hr


def save(name, tensors, **kw):
    try:
        if callable(tensors):
            tensors = tensors()
        hr.save(name + ".hrry", tensors, **kw)
        print("ok", name)
    except Exception as e:  # report, keep going
        print("FAIL", name, type(e).__name__, e)


save("basic", lambda: {
    "model.layers.0/attn/q_proj.weight": hr.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4)),
    "scalar/step": hr.from_numpy(np.array(-42, np.int64)),
    "empty": hr.from_numpy(np.zeros((0, 4), np.float32)),
    "bf16": hr.Tensor(bytes(8), hr.bfloat16, [4]),
    "int4": hr.Tensor(bytes([0x21, 0x43, 0x05]), hr.dtype.int4, [5]),
}, kv={"s": "llama", "i": 32, "f": 0.5, "b": True, "by": b"\0", "arr": [1, 2]})
save("nokv", lambda: {"a": hr.from_numpy(np.ones((2, 2), np.float64))})
save("colmajor", lambda: {"c": hr.Tensor(bytes(24), hr.float32, [2, 3], layout=hr.ColMajorLayout())})
save("strided", lambda: {"s": hr.Tensor(bytes(48), hr.float32, [3, 4], layout=hr.StridedLayout([4, 1]))})
save("tiled", lambda: {"t": hr.Tensor(bytes(4 * 36), hr.float32, [5, 5], layout=hr.TiledLayout([3, 3]))})
save("tiled_nested", lambda: {"t": hr.Tensor(bytes(4 * 64), hr.float32, [8, 8],
                                     layout=hr.TiledLayout([4, 4], inner_layout="col_major"))})
save("morton", lambda: {"m": hr.Tensor(bytes(4 * 64), hr.float32, [5, 7], layout=hr.MortonLayout([3, 3]))})
save("hilbert", lambda: {"h": hr.Tensor(bytes(4 * 16), hr.float32, [4, 4], layout=hr.HilbertLayout(2, 2))})
save("per_tensor", lambda: {"q": hr.Tensor(bytes(6), hr.int8, [2, 3], quantization=hr.PerTensorAffine(0.5, 3))})
save("per_channel", lambda: {"q": hr.Tensor(bytes(6), hr.int8, [2, 3],
                                    quantization=hr.PerChannelAffine.symmetric(axis=0, scale_buffer_index=1),
                                    aux_buffers=[struct.pack("2f", 1.0, 2.0)])})
save("per_block", lambda: {"q": hr.Tensor(bytes(32), hr.dtype.uint4, [2, 32],
                                  quantization=hr.PerBlockAffine.symmetric(1, 16, 1, hr.float32),
                                  aux_buffers=[struct.pack("4f", 1, 1, 1, 1)])})
save("per_block_partial", lambda: {"q": hr.Tensor(bytes(2 * 16), hr.int8, [2, 10],
                                  quantization=hr.PerBlockAffine.symmetric(1, 8, 1, hr.float32),
                                  aux_buffers=[struct.pack("4f", 1, 1, 1, 1)])})
save("nf4", lambda: {"q": hr.Tensor(bytes(32), hr.dtype.uint4, [64],
                            quantization=hr.NF4(axis=0, block_size=64, scale_buffer_index=1),
                            aux_buffers=[struct.pack("f", 1.0)])})
save("mxfp", lambda: {"q": hr.Tensor(bytes(32), hr.dtype.float8_e4m3, [32],
                             quantization=hr.MXFP(axis=0, block_size=32, scale_buffer_index=1),
                             aux_buffers=[bytes([127])])})
save("sharded", lambda: {"s": hr.Tensor(bytes(16), hr.float32, [2, 2], shard=hr.Shard([4, 2], [2, 0]))})
save("stats", lambda: {"s": hr.Tensor(bytes(16), hr.float32, [4],
                              statistics=hr.Statistics(nnz=0, value_min=0.0, value_max=0.0, value_abs_max=0.0))})
save("coo", lambda: {"c": hr.sparse_coo(np.array([5.0, 7.0], np.float32), np.array([[0, 0], [1, 1]], np.uint64), [2, 2])})
try:
    m1 = hr.Tensor(bytes(128), hr.float32, [8, 4], shard=hr.Shard([8, 8], [0, 0]))
    m2 = hr.Tensor(bytes(128), hr.float32, [8, 4], shard=hr.Shard([8, 8], [0, 4]))
    comp = hr.Composite("partition", shape=[8, 8], dtype=hr.float32, members=[m1, m2])
    save("composite", lambda: {"head": comp, "z_after": hr.from_numpy(np.ones(3, np.int32))})
except Exception as e:
    print("FAIL composite", e)
save("bool_f6", lambda: {"b": hr.Tensor(bytes(2), hr.dtype.bool, [10]),
                 "f6": hr.Tensor(bytes(3), hr.dtype.float6_e2m3, [1])})
save("empties", lambda: {"e1": hr.from_numpy(np.zeros((0,), np.float32)), "e2": hr.from_numpy(np.zeros((3, 0), np.int8)),
                 "x": hr.from_numpy(np.ones(2, np.float32))})
save("none", lambda: {})
save("sorted_names", lambda: {"b": hr.from_numpy(np.ones(2, np.uint8)), "a": hr.from_numpy(np.ones(1, np.uint8))})


def overlay():
    base = hr.Tensor(bytes(64), hr.float32, [4, 4], shard=hr.Shard([4, 4], [0, 0]))
    corr = hr.Tensor(bytes(16), hr.float32, [2, 2], shard=hr.Shard([4, 4], [1, 1]))
    return {"ov": hr.Composite("overlay", shape=[4, 4], dtype=hr.float32, members=[base, corr], combine_op="add")}


def group():
    a = hr.from_numpy(np.ones(3, np.int8))
    b = hr.from_numpy(np.ones((2, 2), np.float64))
    return {"g": hr.Composite("group", shape=[1], dtype=hr.float32, members=[a, b])}


save("overlay", overlay)
save("group", group)


def csr():
    # [[1, 0, 2], [0, 0, 3]]: values, col_indices, row_ptr
    vals = struct.pack("3f", 1, 2, 3)
    cols = struct.pack("3Q", 0, 2, 2)
    ptr = struct.pack("3Q", 0, 2, 3)
    return {"csr": hr.Tensor(vals, hr.float32, [2, 3], layout=hr.CsrLayout(nnz=3), aux_buffers=[cols, ptr])}


def csc():
    vals = struct.pack("3f", 1, 3, 2)
    rows = struct.pack("3Q", 0, 0, 1)
    ptr = struct.pack("4Q", 0, 1, 1, 3)
    return {"csc": hr.Tensor(vals, hr.float32, [2, 3], layout=hr.CscLayout(nnz=3), aux_buffers=[rows, ptr])}


def csf():
    # one non-zero at [1, 0, 1] in [2, 2, 2]
    vals = struct.pack("f", 5)
    pos0, crd0 = struct.pack("2Q", 0, 1), struct.pack("Q", 1)
    pos1, crd1 = struct.pack("2Q", 0, 1), struct.pack("Q", 0)
    pos2, crd2 = struct.pack("2Q", 0, 1), struct.pack("Q", 1)
    return {"csf": hr.Tensor(vals, hr.float32, [2, 2, 2], layout=hr.CsfLayout(nnz=1, mode_order=[0, 1, 2]),
                             aux_buffers=[pos0, crd0, pos1, crd1, pos2, crd2])}


def paged():
    # 2 pages of 2 tokens, 1 head, dim 2: pool 8 f16; one sequence of 3 tokens over pages [1, 0]
    pool = bytes(2 * 2 * 1 * 2 * 2)
    table = struct.pack("2I", 1, 0)
    seq = struct.pack("2I", 0, 2)
    return {"kv": hr.Tensor(pool, hr.float16, [3, 1, 2],
                            layout=hr.BlockPagedLayout(page_size=2, num_pages=2, paged_axis=0, num_seqs=1),
                            aux_buffers=[table, seq])}


def ext():
    return {"x24": hr.Tensor(bytes(30), hr.dtype.int8, [10]) if False else
            hr.Tensor(bytes(30), hr.Dtype.from_tag(0xF0), [10], extension_type=hr.ExtensionType(bit_width=24, is_signed=True))}


def private():
    return {"p": hr.Tensor(bytes(16), hr.float32, [4],
                           layout=hr.PrivateExtensionLayout(0xF0, extension_layout_id=7, extension_data=b"\x01"))}


def types():
    return {
        "c64": hr.from_numpy(np.ones(2, np.complex64)),
        "c128": hr.from_numpy(np.ones(1, np.complex128)),
        "b": hr.Tensor(bytes([0b101]), hr.dtype.bool, [3]),
        "f8": hr.Tensor(bytes(3), hr.dtype.float8_e5m2, [3]),
        "u2": hr.Tensor(bytes(2), hr.dtype.uint2, [5]),
        "f16s": hr.from_numpy(np.array(1.5, np.float16)),
    }


def tiled_strided():
    return {"ts": hr.Tensor(bytes(4 * 16), hr.float32, [4, 4],
                            layout=hr.TiledLayout([2, 2], outer_layout="col_major", inner_layout="col_major"))}


for name, fn in [("csr", csr), ("csc", csc), ("csf", csf), ("paged", paged), ("ext", ext),
                 ("private", private), ("types", types), ("tiled_colmajor", tiled_strided)]:
    save(name, fn)

# from_numpy on a NumPy bool array writes one byte per element under the
# bit-packed bool tag: a spec reader would decode other values, so ztfs
# refuses this file (HurrayBuffer: 3 bytes where 3 bools need 1).
save("numpy_bool_rejected", lambda: {"b": hr.from_numpy(np.array([True, False, True]))})
