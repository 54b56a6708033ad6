//! Integration tests: the real kube-sim binary, driven by kube-rs clients, raw HTTP and kubectl.

mod conformance;
mod crd;
mod crud;
mod discovery;
mod faults;
mod fixtures;
mod kubectl;
mod lists;
mod mcs_api;
mod patch;
mod refusals;
mod requests;
mod services;
mod support;
mod watch;
mod webhooks;
