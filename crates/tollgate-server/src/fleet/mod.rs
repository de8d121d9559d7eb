//! What the replicas of a fleet share beyond governance's counters: [`routing`] keeps
//! cooldowns and deployment usage in step across replicas through the fleet's Redis.

pub mod routing;
