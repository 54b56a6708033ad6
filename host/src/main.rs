//! The `mcs-policy` binary: crypto provider, logging, then the chosen command.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use mcs_policy::config::{Args, Command, ComponentArgs, EvalArgs, EvalCommand};
use mcs_policy::engine::{EMBEDDED_COMPONENT, PolicyEngine};
use mcs_policy::settings::{ContextFile, load_policy};
use mcs_policy::{controller, eval, manifests, webhook};

fn main() -> ExitCode {
    let args = Args::parse();
    init_tracing(&args.log_format);
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    match args.command {
        Command::Serve(serve) => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            runtime.block_on(webhook::serve(*serve, mcs_policy::shutdown_signal()))?;
            Ok(())
        }
        Command::Sync(sync) => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            runtime.block_on(controller::run(*sync, mcs_policy::shutdown_signal()))?;
            Ok(())
        }
        Command::Eval(what) => run_eval(what),
        Command::Manifests(m) => {
            print!("{}", manifests::render(&m)?);
            Ok(())
        }
        Command::Component(c) => write_component(&c),
    }
}

fn run_eval(what: EvalCommand) -> anyhow::Result<()> {
    let (args, kind) = match &what {
        EvalCommand::Validate(a) => (a, "validate"),
        EvalCommand::Mutate(a) => (a, "mutate"),
        EvalCommand::Filter(a) => (a, "filter"),
        EvalCommand::Service(a) => (a, "service"),
    };
    let engine = load_engine(args)?;
    let budget = Duration::from_millis(args.budget_ms);
    let mut stdout = std::io::stdout().lock();
    if kind == "filter" {
        serde_json::to_writer_pretty(&mut stdout, &eval::filter(&engine, &args.request, budget)?)?;
    } else if kind == "service" {
        let answer = eval::service(&engine, &args.request, budget)?;
        serde_json::to_writer_pretty(&mut stdout, &answer)?;
    } else {
        let policy = load_policy(&args.policy.policy)?;
        let context = match &args.policy.context {
            Some(path) => ContextFile::load(path)?,
            None => ContextFile::default(),
        };
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

fn load_engine(args: &EvalArgs) -> anyhow::Result<PolicyEngine> {
    let options = args.engine.options();
    Ok(match &args.engine.component {
        Some(path) => PolicyEngine::from_file(path, options)?,
        None => PolicyEngine::embedded(options)?,
    })
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
