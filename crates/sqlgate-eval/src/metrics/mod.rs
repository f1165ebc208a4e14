//! Metrics computed from executions and from the SQL itself.

pub mod efficiency;
pub mod esm;
pub mod etm;
pub mod ex;
pub mod reliability;
pub mod retrieval;
pub mod sql2nl;
pub mod sqlmorph;
