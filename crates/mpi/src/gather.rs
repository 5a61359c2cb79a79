//! Moving serialisable values between ranks as JSON bytes: every rank's value to all
//! ranks (placements), or to rank 0 alone (records, which rank 0 alone emits), or rank
//! 0's to every rank (what a resumed run has finished).

use crate::error::{Error, Result};
use mpi::datatype::PartitionMut;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

fn encode<T: Serialize>(v: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(v).map_err(|e| Error::System(format!("serialising for MPI: {e}")))
}

/// Split concatenated JSON documents by their byte counts and decode each.
pub fn decode_parts<T: DeserializeOwned>(bytes: &[u8], counts: &[i32]) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(counts.len());
    let mut at = 0usize;
    for (r, &c) in counts.iter().enumerate() {
        let end = at + c as usize;
        let part = bytes
            .get(at..end)
            .ok_or_else(|| Error::System(format!("rank {r}'s message is truncated")))?;
        out.push(
            serde_json::from_slice(part)
                .map_err(|e| Error::System(format!("rank {r} sent bad JSON: {e}")))?,
        );
        at = end;
    }
    Ok(out)
}

fn displacements(counts: &[i32]) -> Vec<i32> {
    counts
        .iter()
        .scan(0i32, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect()
}

fn count(len: usize) -> Result<i32> {
    i32::try_from(len)
        .map_err(|_| Error::System(format!("{len} bytes is too large for one MPI message")))
}

/// Every rank's value, in rank order, on every rank (collective).
pub fn all_gather<T: Serialize + DeserializeOwned>(
    comm: &SimpleCommunicator,
    v: &T,
) -> Result<Vec<T>> {
    let mine = encode(v)?;
    let n = comm.size() as usize;
    let mut counts = vec![0i32; n];
    comm.all_gather_into(&count(mine.len())?, &mut counts[..]);
    let displs = displacements(&counts);
    let total: usize = counts.iter().map(|&c| c as usize).sum();
    let mut buf = vec![0u8; total];
    {
        let mut part = PartitionMut::new(&mut buf[..], &counts[..], &displs[..]);
        comm.all_gather_varcount_into(&mine[..], &mut part);
    }
    decode_parts(&buf, &counts)
}

/// Every rank's value, in rank order, on rank 0; None on the other ranks (collective).
pub fn gather_to_root<T: Serialize + DeserializeOwned>(
    comm: &SimpleCommunicator,
    v: &T,
) -> Result<Option<Vec<T>>> {
    let mine = encode(v)?;
    let root = comm.process_at_rank(0);
    let len = count(mine.len())?;
    if comm.rank() != 0 {
        root.gather_into(&len);
        root.gather_varcount_into(&mine[..]);
        return Ok(None);
    }
    let n = comm.size() as usize;
    let mut counts = vec![0i32; n];
    root.gather_into_root(&len, &mut counts[..]);
    let displs = displacements(&counts);
    let total: usize = counts.iter().map(|&c| c as usize).sum();
    let mut buf = vec![0u8; total];
    {
        let mut part = PartitionMut::new(&mut buf[..], &counts[..], &displs[..]);
        root.gather_varcount_into_root(&mine[..], &mut part);
    }
    decode_parts(&buf, &counts).map(Some)
}

/// Rank 0's value on every rank (collective; the other ranks' `v` is not sent).
pub fn bcast_from_root<T: Serialize + DeserializeOwned>(
    comm: &SimpleCommunicator,
    v: &T,
) -> Result<T> {
    let root = comm.process_at_rank(0);
    let mut bytes = if comm.rank() == 0 {
        encode(v)?
    } else {
        Vec::new()
    };
    let mut len = count(bytes.len())?;
    root.broadcast_into(&mut len);
    bytes.resize(len as usize, 0);
    root.broadcast_into(&mut bytes[..]);
    serde_json::from_slice(&bytes).map_err(|e| Error::System(format!("rank 0 sent bad JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_decode_by_count_and_truncation_is_an_error() {
        let a = serde_json::to_vec(&vec![1u32, 2]).unwrap();
        let b = serde_json::to_vec(&vec![3u32]).unwrap();
        let all = [a.clone(), b.clone()].concat();
        let counts = [a.len() as i32, b.len() as i32];
        let v: Vec<Vec<u32>> = decode_parts(&all, &counts).unwrap();
        assert_eq!(v, [vec![1, 2], vec![3]]);
        assert_eq!(displacements(&counts), [0, a.len() as i32]);
        assert!(decode_parts::<Vec<u32>>(&all[..3], &counts).is_err());
    }
}
