//! Phase `fleet`'s report: one block per size, then the curve as a Markdown table.

use super::*;

fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// RSS per member (KiB) of `rss` over the baseline (the hub and one empty member), per member
/// beyond that one.
fn per_member(row: &FleetRow, rss: u64) -> f64 {
    (rss as f64 - row.rss_one as f64) / (row.members - 1) as f64
}

/// The slowest of the live rounds' times (to every consumer, to every importer); `None` when one
/// did not arrive.
fn slowest(row: &FleetRow) -> (Option<Duration>, Option<Duration>) {
    let consumers: Option<Vec<Duration>> = row.live.iter().map(|r| r.0).collect();
    let importers: Option<Vec<Duration>> = row.live.iter().map(|r| r.1).collect();
    let max = |all: Option<Vec<Duration>>| all.and_then(|a| a.into_iter().max());
    (max(consumers), max(importers))
}

/// `heap` bytes per cached object.
fn per_object(row: &FleetRow, heap: f64) -> f64 {
    if row.cached > 0.0 {
        heap / row.cached
    } else {
        0.0
    }
}

fn ms(d: Option<Duration>) -> String {
    d.map_or("-".into(), |d| {
        format!("{:.0} ms", d.as_secs_f64() * 1000.0)
    })
}

pub(crate) fn print_fleet_row(row: &FleetRow) {
    println!(
        "memory: VmRSS over the hub and one empty member {:.1} MB, over the {} empty members {:.1} MB ({:.0} KiB per member), loaded at rest {:.1} MB ({:.0} KiB per member); VmHWM {:.1} MB; heap {:.1} MB over {:.0} cached objects = {:.0} bytes each ({:.0} over the baseline's {:.1} MB)",
        mb(row.rss_one),
        row.members,
        mb(row.rss_idle),
        per_member(row, row.rss_idle),
        mb(row.rss_rest),
        per_member(row, row.rss_rest),
        mb(row.hwm),
        row.heap / 1e6,
        row.cached,
        per_object(row, row.heap),
        per_object(row, row.heap - row.heap_one),
        row.heap_one / 1e6
    );
}

pub(crate) fn print_fleet_table(settings: &Settings, rows: &[FleetRow]) {
    println!(
        "\n== fleet summary: --workers {}, --resync-interval {}; live: {LIVE} changes at rest, the slowest",
        settings.workers[0],
        settings.resync,
        LIVE = rows.first().map_or(0, |r| r.live.len())
    );
    println!(
        "| members (serving CRDs) | MCS, exports | copies, imports | every copy and import | floor (ctrl / kube-sims / bench CPU) | ratio | others' CPU meanwhile | live: every consumer, every importer | requests at rest (in the resync window) | VmHWM | heap per cached object | RSS per member: loaded, idle |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in rows {
        let floor = r.floor();
        let all = r.all.map_or("did not converge".into(), |d| {
            format!("{:.2} s", d.as_secs_f64())
        });
        let ratio = r
            .all
            .map_or("-".into(), |d| format!("{:.2}x", d.as_secs_f64() / floor));
        let (consumers, importers) = slowest(r);
        let rest = r.rest.as_ref().map_or("-".into(), |x| {
            format!(
                "{} in {:.0} s ({} in {:.0} s)",
                x.requests.len(),
                x.span.as_secs_f64(),
                x.window_requests.len(),
                x.window.as_secs_f64()
            )
        });
        println!(
            "| {} ({}) | {}, {} | {}, {} | {all} | {floor:.2} s ({:.1} / {:.1} / {:.1} s) | {ratio} | {:.1} s | {}, {} | {rest} | {:.1} MB | {:.0} B ({:.0} B over the baseline; {:.0} objects) | {:.0} KiB, {:.0} KiB |",
            r.members,
            r.serving,
            r.mcs,
            r.exports,
            r.converged.expected.0,
            r.converged.expected.1,
            r.cpu.0,
            r.cpu.1,
            r.cpu.2,
            r.others,
            ms(consumers),
            ms(importers),
            mb(r.hwm),
            per_object(r, r.heap),
            per_object(r, r.heap - r.heap_one),
            r.cached,
            per_member(r, r.rss_rest),
            per_member(r, r.rss_idle),
        );
    }
}
