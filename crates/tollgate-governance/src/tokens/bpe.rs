//! Byte-pair counting over a rank table, for the ASCII fast path.
//!
//! The rank table (token bytes → rank) is rebuilt once from `tiktoken-rs`'s bundled
//! vocabulary (`CoreBPE::decode_bytes` for every ordinary rank) into `FxHashMap`s, because
//! `tiktoken-rs` keeps its own private. Merging follows tiktoken's `_byte_pair_merge`: repeatedly
//! merge the adjacent pair with the lowest rank (leftmost on ties) until no pair is a token.

use std::cell::RefCell;

use rustc_hash::FxHashMap;
use tiktoken_rs::CoreBPE;

use super::pretokenize::{Pattern, next_piece, segments};

/// A vocabulary with its fast counting path. Tokens of up to 15 bytes (nearly all) are keyed
/// by their bytes packed into a `u128` with the length in the top byte, so a lookup hashes two
/// words and compares inline instead of chasing a pointer; longer tokens use a byte-slice map.
pub(crate) struct Vocab {
    bpe: &'static CoreBPE,
    short: FxHashMap<u128, u32>,
    long: FxHashMap<Box<[u8]>, u32>,
    pattern: Pattern,
}

const PACK_MAX: usize = 15;

/// Entries kept in each thread's cache of merged pieces before it is cleared (bounded memory).
const MERGE_CACHE_MAX: usize = 1 << 16;

/// Slots of each thread's direct-mapped cache of piece → token count (hot pieces skip the
/// 200K-entry rank table): 8192 × 32 bytes = 256 KiB.
const HOT_SLOTS: usize = 1 << 13;

#[inline]
fn hot_slot(key: u128) -> usize {
    let h =
        ((key as u64) ^ ((key >> 64) as u64).rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> (64 - 13)) as usize
}

/// One direct-mapped cache per vocabulary: slots of (packed piece, token count).
type HotCaches = [Box<[(u128, u32)]>; 2];

thread_local! {
    /// Direct-mapped piece cache per thread, one per vocabulary (index = `Pattern as usize`).
    /// Key 0 never occurs (a packed piece carries its non-zero length).
    static HOT: RefCell<HotCaches> =
        RefCell::new([vec![(0, 0); HOT_SLOTS].into_boxed_slice(), vec![(0, 0); HOT_SLOTS].into_boxed_slice()]);

    /// Token counts of pieces (≤ 15 bytes) that needed merging, per thread and vocabulary:
    /// a piece seen once is not merged again (about half the counting time on source code).
    static MERGE_CACHE: RefCell<FxHashMap<(u8, u128), u32>> = RefCell::new(FxHashMap::default());
}

#[inline]
fn pack(b: &[u8]) -> u128 {
    let mut buf = [0u8; 16];
    buf[..b.len()].copy_from_slice(b);
    buf[15] = b.len() as u8;
    u128::from_le_bytes(buf)
}

impl Vocab {
    /// Builds the rank table for ordinary ranks `0..n_ranks` (special tokens excluded).
    pub(crate) fn new(bpe: &'static CoreBPE, n_ranks: u32, pattern: Pattern) -> Self {
        let mut short = FxHashMap::with_capacity_and_hasher(n_ranks as usize, Default::default());
        let mut long = FxHashMap::default();
        for r in 0..n_ranks {
            if let Ok(bytes) = bpe.decode_bytes(&[r]) {
                if bytes.len() <= PACK_MAX {
                    short.insert(pack(&bytes), r);
                } else {
                    long.insert(bytes.into_boxed_slice(), r);
                }
            }
        }
        Self {
            bpe,
            short,
            long,
            pattern,
        }
    }

    /// Tokens in `text`: ASCII segments through the hand-written splitter and the rank table,
    /// others through `tiktoken-rs`.
    pub(crate) fn count(&self, text: &str) -> u64 {
        let mut n = 0u64;
        for (seg, ascii, last) in segments(text) {
            if ascii {
                let b = seg.as_bytes();
                HOT.with(|hot| {
                    let mut hot = hot.borrow_mut();
                    let hot = &mut hot[self.pattern as usize];
                    let mut i = 0;
                    while i < b.len() {
                        let e = next_piece(self.pattern, b, i, last);
                        let piece = &b[i..e];
                        if piece.len() <= PACK_MAX {
                            let key = pack(piece);
                            let slot = &mut hot[hot_slot(key)];
                            if slot.0 == key {
                                n += u64::from(slot.1);
                            } else {
                                let c = self.piece_tokens(piece);
                                *slot = (key, c as u32);
                                n += c;
                            }
                        } else {
                            n += self.piece_tokens(piece);
                        }
                        i = e;
                    }
                });
            } else {
                n += self.bpe.encode_ordinary(seg).len() as u64;
            }
        }
        n
    }

    #[inline]
    fn rank(&self, bytes: &[u8]) -> u32 {
        let found = if bytes.len() <= PACK_MAX {
            self.short.get(&pack(bytes))
        } else {
            self.long.get(bytes)
        };
        found.copied().unwrap_or(u32::MAX)
    }

    /// Tokens of one pre-tokenized piece.
    fn piece_tokens(&self, piece: &[u8]) -> u64 {
        if piece.len() <= 1 || self.rank(piece) != u32::MAX {
            return 1;
        }
        if piece.len() > PACK_MAX {
            return self.merge(piece);
        }
        let key = (self.pattern as u8, pack(piece));
        if let Some(n) = MERGE_CACHE.with(|c| c.borrow().get(&key).copied()) {
            return u64::from(n);
        }
        let n = self.merge(piece);
        MERGE_CACHE.with(|c| {
            let mut c = c.borrow_mut();
            if c.len() >= MERGE_CACHE_MAX {
                c.clear();
            }
            c.insert(key, n as u32);
        });
        n
    }

    /// Byte-pair merge of a piece that is not itself a token; returns its token count.
    fn merge(&self, piece: &[u8]) -> u64 {
        // parts[i] = (start of part i, rank of the pair starting at part i)
        let mut parts: Vec<(usize, u32)> = Vec::with_capacity(piece.len() + 1);
        let mut min = (u32::MAX, usize::MAX);
        for i in 0..piece.len() - 1 {
            let r = self.rank(&piece[i..i + 2]);
            if r < min.0 {
                min = (r, i);
            }
            parts.push((i, r));
        }
        parts.push((piece.len() - 1, u32::MAX));
        parts.push((piece.len(), u32::MAX));
        let pair_rank = |parts: &Vec<(usize, u32)>, i: usize| -> u32 {
            if i + 3 < parts.len() {
                self.rank(&piece[parts[i].0..parts[i + 3].0])
            } else {
                u32::MAX
            }
        };
        while min.0 != u32::MAX {
            let i = min.1;
            if i > 0 {
                parts[i - 1].1 = pair_rank(&parts, i - 1);
            }
            parts[i].1 = pair_rank(&parts, i);
            parts.remove(i + 1);
            min = (u32::MAX, usize::MAX);
            for (j, &(_, r)) in parts[..parts.len() - 1].iter().enumerate() {
                if r < min.0 {
                    min = (r, j);
                }
            }
        }
        (parts.len() - 1) as u64
    }
}
