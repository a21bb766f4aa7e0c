//! The inbox's integration tests in one binary, a module per concern: thirteen binaries
//! of ~50 MB each filled a CI disk, and linked thirteen times.
mod approvers;
mod audit;
mod common;
mod conformance;
mod consent;
mod contacts;
mod did_change;
mod email;
mod email_tls;
mod folder_and_executors;
mod grants;
mod guardian;
mod hostile;
mod http;
mod intent;
mod layers;
mod mail;
mod mail_v2;
mod model;
mod phone;
mod quorum;
mod replies;
mod team;
mod uamp;
mod uamp_client;
mod v11;
