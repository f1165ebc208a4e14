//! Metrics computed from executions and from the SQL itself.

pub mod bootstrap;
pub mod case_metric;
pub mod efficiency;
pub mod esm;
pub mod etm;
pub mod ex;
pub mod noise;
pub mod reliability;
pub mod retrieval;
pub mod soft_f1;
pub mod sql2nl;
pub mod sqlmorph;
pub mod state;
