//! A GGUF writer for the corpus, sharing no code with the reader: KVs and
//! tensor infos as bytes, tensors placed at the next aligned offset unless
//! an offset is given.

/// A value's bytes: its type tag and payload.
pub struct V(pub u32, pub Vec<u8>);

pub fn string(s: &[u8]) -> Vec<u8> {
    let mut v = (s.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(s);
    v
}

pub fn str_v(s: &str) -> V {
    V(8, string(s.as_bytes()))
}

pub fn u32_v(n: u32) -> V {
    V(4, n.to_le_bytes().to_vec())
}

/// An array of `n` elements of type `elem`, their bytes concatenated.
pub fn array(elem: u32, n: u64, items: &[u8]) -> V {
    let mut v = elem.to_le_bytes().to_vec();
    v.extend_from_slice(&n.to_le_bytes());
    v.extend_from_slice(items);
    V(9, v)
}

/// A GGUF file under construction.
#[derive(Clone)]
pub struct Gguf {
    pub version: u32,
    pub alignment: usize,
    pub kv: Vec<u8>,
    pub kv_count: u64,
    pub infos: Vec<u8>,
    pub tensor_count: u64,
    pub data: Vec<u8>,
}

impl Gguf {
    pub fn new() -> Gguf {
        Gguf {
            version: 3,
            alignment: 32,
            kv: Vec::new(),
            kv_count: 0,
            infos: Vec::new(),
            tensor_count: 0,
            data: Vec::new(),
        }
    }

    pub fn kv(mut self, key: &str, v: V) -> Gguf {
        self.kv.extend(string(key.as_bytes()));
        self.kv.extend_from_slice(&v.0.to_le_bytes());
        self.kv.extend(v.1);
        self.kv_count += 1;
        self
    }

    /// A tensor info only.
    pub fn info(mut self, name: &[u8], dims: &[u64], ty: u32, offset: u64) -> Gguf {
        self.infos.extend(string(name));
        self.infos
            .extend_from_slice(&(dims.len() as u32).to_le_bytes());
        for d in dims {
            self.infos.extend_from_slice(&d.to_le_bytes());
        }
        self.infos.extend_from_slice(&ty.to_le_bytes());
        self.infos.extend_from_slice(&offset.to_le_bytes());
        self.tensor_count += 1;
        self
    }

    /// A tensor and its bytes at the next aligned offset.
    pub fn tensor(self, name: &str, dims: &[u64], ty: u32, bytes: &[u8]) -> Gguf {
        let offset = self.data.len().next_multiple_of(self.alignment);
        let mut g = self.info(name.as_bytes(), dims, ty, offset as u64);
        g.data.resize(offset, 0);
        g.data.extend_from_slice(bytes);
        g
    }

    pub fn bytes(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.tensor_count.to_le_bytes());
        out.extend_from_slice(&self.kv_count.to_le_bytes());
        out.extend_from_slice(&self.kv);
        out.extend_from_slice(&self.infos);
        out.resize(out.len().next_multiple_of(self.alignment), 0);
        out.extend_from_slice(&self.data);
        // Pad the last tensor too, as gguf-py does.
        out.resize(out.len().next_multiple_of(self.alignment), 0);
        out
    }
}

/// `n` bytes counting up from `seed`.
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}
