//! What the replicas of a fleet share beyond the database: [`identity`] (management changes
//! reaching every replica's in-process cache and router).

pub mod identity;
