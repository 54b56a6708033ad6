//! The `mcs-policy` binary: crypto provider, logging, then the chosen command.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use mcs_policy::config::{Args, Command, ComponentArgs, EvalCommand};
use mcs_policy::engine::EMBEDDED_COMPONENT;
use mcs_policy::{controller, dns, eval, logging, manifests, webhook};

fn main() -> ExitCode {
    let args = Args::parse();
    logging::init(&args.log_format);
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            logging::exit_error(&err);
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    match args.command {
        Command::Serve(serve) => {
            mcs_policy::malloc::tune();
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            runtime.block_on(webhook::serve(*serve, mcs_policy::shutdown_signal()))?;
            Ok(())
        }
        Command::Sync(sync) => {
            mcs_policy::malloc::tune();
            let runtime = controller::tokio_runtime(sync.runtime_threads)
                .context("starting the async runtime")?;
            runtime.block_on(controller::run(*sync, mcs_policy::shutdown_signal()))?;
            Ok(())
        }
        Command::Dns(args) => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            runtime.block_on(dns::run(*args, mcs_policy::shutdown_signal()))
        }
        Command::Eval(what) => run_eval(what),
        Command::Manifests(m) => {
            print!("{}", manifests::render(&m)?);
            Ok(())
        }
        Command::Component(c) => write_component(&c),
        Command::Unregister(u) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            runtime.block_on(webhook::managed::unregister(&u))?;
            Ok(())
        }
    }
}

fn run_eval(what: EvalCommand) -> anyhow::Result<()> {
    let (args, kind) = match &what {
        EvalCommand::Validate(a) => (a, "validate"),
        EvalCommand::Mutate(a) => (a, "mutate"),
        EvalCommand::Filter(a) => (a, "filter"),
        EvalCommand::Service(a) => (a, "service"),
        EvalCommand::LoadBalancer(a) => (a, "load-balancer"),
        EvalCommand::Decide(a) => (a, "decide"),
        EvalCommand::Conclude(a) => (a, "conclude"),
        EvalCommand::ClustersetDecide(a) => (a, "clusterset-decide"),
    };
    let engine = args.engine.load()?;
    let budget = Duration::from_millis(args.budget_ms);
    let mut stdout = std::io::stdout().lock();
    if kind == "filter" {
        serde_json::to_writer_pretty(&mut stdout, &eval::filter(&engine, &args.request, budget)?)?;
    } else if kind == "service" {
        let answer = eval::service(&engine, &args.request, budget)?;
        serde_json::to_writer_pretty(&mut stdout, &answer)?;
    } else if kind == "load-balancer" {
        let answer = eval::load_balancer(&engine, &args.request, budget)?;
        serde_json::to_writer_pretty(&mut stdout, &answer)?;
    } else if kind == "decide" {
        let answer = eval::decide(&engine, &args.request, budget)?;
        serde_json::to_writer_pretty(&mut stdout, &answer)?;
    } else if kind == "clusterset-decide" {
        let answer = eval::clusterset_decide(&engine, &args.request, budget)?;
        serde_json::to_writer_pretty(&mut stdout, &answer)?;
    } else if kind == "conclude" {
        let answer = eval::conclude(&engine, &args.request, budget)?;
        serde_json::to_writer_pretty(&mut stdout, &answer)?;
    } else {
        let (policy, context) = args.policy.load()?;
        let out = eval::admission(
            &engine,
            kind == "mutate",
            &policy,
            &context,
            &args.request,
            budget,
        )?;
        serde_json::to_writer_pretty(&mut stdout, &out)?;
    }
    writeln!(stdout)?;
    Ok(())
}

fn write_component(args: &ComponentArgs) -> anyhow::Result<()> {
    if args.out.as_os_str() == "-" {
        std::io::stdout().lock().write_all(EMBEDDED_COMPONENT)?;
    } else {
        std::fs::write(&args.out, EMBEDDED_COMPONENT)
            .with_context(|| format!("writing the component to {}", args.out.display()))?;
        eprintln!(
            "wrote policy component ({} bytes) to {}",
            EMBEDDED_COMPONENT.len(),
            args.out.display()
        );
    }
    Ok(())
}
