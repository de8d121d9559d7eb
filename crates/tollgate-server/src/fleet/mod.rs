//! What the replicas of a fleet share through its Redis beyond governance's counters:
//! [`identity`] (management changes reaching every replica's in-process cache and router) and
//! [`routing`] (cooldowns and deployment usage kept in step).

pub mod identity;
pub mod routing;
