//! A key's hash slot, as Redis Cluster computes it: CRC16 (XMODEM: polynomial 0x1021, initial
//! value 0) of the key, or of its hash tag (the bytes between the first `{` and the next `}`,
//! when there is at least one), modulo 16384. The store computes it itself so that a call goes
//! straight to the node that owns the key, with no lookup and no redirect.

/// How many slots a cluster has.
pub(crate) const SLOTS: usize = 16384;

/// CRC16/XMODEM, one table lookup per byte.
const TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| (crc << 8) ^ TABLE[usize::from((crc >> 8) as u8 ^ b)])
}

/// The part of `key` that is hashed: its hash tag if it has a non-empty one, else all of it.
fn hashed(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{')
        && let Some(len) = key[open + 1..].iter().position(|&b| b == b'}')
        && len > 0
    {
        return &key[open + 1..open + 1 + len];
    }
    key
}

/// The slot of `key`.
pub(crate) fn slot(key: &[u8]) -> u16 {
    crc16(hashed(key)) % SLOTS as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_is_xmodem() {
        // The check value of CRC-16/XMODEM, and the example in the Redis Cluster spec.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(slot(b"123456789"), 0x31C3); // below 16384 already
    }

    #[test]
    fn hash_tags_follow_the_cluster_spec() {
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"{user1000}.following"), slot(b"{user1000}.followers"));
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        // An empty tag hashes the whole key; only the first `{` counts.
        assert_eq!(slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % 16384);
        assert_eq!(slot(b"foo{{bar}}zap"), slot(b"{bar"));
        assert_eq!(slot(b"foo{bar}{zap}"), slot(b"bar"));
        // No closing brace: the whole key.
        assert_eq!(slot(b"foo{bar"), crc16(b"foo{bar") % 16384);
    }
}
