//! Phase `fleet`: what the members show. One channel carries two watches per member: our
//! copies (tag = the member's index) and, in members serving the upstream CRDs, the imported
//! slices (tag = the members' count + the member's index).

use super::*;

/// The clusterset side's slices: imported EndpointSlices.
const IMPORTED: &str = "endpointslice-clusterset-controller.karmada.io";

/// Opens the watches of every member's copies and imported slices in namespace `ns`.
pub(crate) async fn watch_members(
    fleet: &Fleet,
    plan: &Plan,
    ns: &str,
) -> UnboundedReceiver<WatchEvent> {
    let (sender, events) = unbounded_channel();
    let members = fleet.members.len();
    let selector = |managed_by: &str| {
        format!(
            "{}?watch=true&labelSelector={MANAGED_BY}%3D{managed_by}",
            slices_path(ns)
        )
    };
    for (index, (_, url)) in fleet.members.iter().enumerate() {
        watch(&fleet.http, url, &selector(DISPATCH), index, sender.clone()).await;
        if plan.crds[index] {
            let tag = members + index;
            watch(&fleet.http, url, &selector(IMPORTED), tag, sender.clone()).await;
        }
    }
    events
}

/// What is still awaited: copies by member, imported slices by `(member, address)`.
pub(crate) struct Missing {
    pub(crate) copies: Vec<HashSet<String>>,
    pub(crate) imports: HashSet<(usize, String)>,
}

/// When the copies and the imports were all in place, from `start`.
pub(crate) struct Converged {
    /// The first copy or import seen (the controller's start-up before it), and what `cpu`
    /// returned then.
    pub(crate) first: Option<(Duration, (f64, f64, f64))>,
    pub(crate) copies: Option<Duration>,
    pub(crate) imports: Option<Duration>,
    /// The copies and imports found, of those expected.
    pub(crate) found: (usize, usize),
    pub(crate) expected: (usize, usize),
}

/// Follows the watches until nothing is missing or `deadline`; prints progress every 5 s.
/// `cpu` is called at the first copy or import seen.
pub(crate) async fn await_converged(
    events: &mut UnboundedReceiver<WatchEvent>,
    missing: &mut Missing,
    members: usize,
    (start, deadline): (Instant, Instant),
    cpu: impl Fn() -> (f64, f64, f64),
) -> Converged {
    let mut first = None;
    let copies_left = |m: &Missing| m.copies.iter().map(HashSet::len).sum::<usize>();
    let expected = (copies_left(missing), missing.imports.len());
    let (mut copies, mut imports) = (None, None);
    let mut report = start + Duration::from_secs(5);
    let done = |at: Instant, slot: &mut Option<Duration>, left: usize| {
        if left == 0 && slot.is_none() {
            *slot = Some(at - start);
        }
    };
    done(start, &mut copies, expected.0);
    done(start, &mut imports, expected.1);
    while copies.is_none() || imports.is_none() {
        match next_before(events, deadline.min(report)).await {
            Some(event) if event.kind == "ADDED" || event.kind == "MODIFIED" => {
                if first.is_none() {
                    first = Some((event.at - start, cpu()));
                }
                if event.tag < members {
                    missing.copies[event.tag].remove(&event.name);
                } else if let Some(address) = event.first_address.clone() {
                    missing.imports.remove(&(event.tag - members, address));
                }
                let left = (copies_left(missing), missing.imports.len());
                done(event.at, &mut copies, left.0);
                done(event.at, &mut imports, left.1);
            }
            Some(_) => {}
            None if Instant::now() >= deadline => break,
            None => {
                println!(
                    "  t={:>5.1}s copies {}/{} imports {}/{}",
                    start.elapsed().as_secs_f64(),
                    expected.0 - copies_left(missing),
                    expected.0,
                    expected.1 - missing.imports.len(),
                    expected.1
                );
                report += Duration::from_secs(5);
            }
        }
    }
    Converged {
        first,
        copies,
        imports,
        found: (
            expected.0 - copies_left(missing),
            expected.1 - missing.imports.len(),
        ),
        expected,
    }
}

/// Round `k` of the live change at rest: at once, provider slice of MCS `k` (its first
/// provider's) and the exported slice of export `k` get new addresses (PUTs in parallel);
/// the time from just before the PUTs until every consumer of that MCS shows the copy with its
/// new address, and until every member serving the CRDs shows the import with it (`None` after
/// 10 s).
pub(crate) async fn live_round(
    fleet: &Fleet,
    plan: &Plan,
    events: &mut UnboundedReceiver<WatchEvent>,
    ns: &str,
    k: usize,
) -> (Option<Duration>, Option<Duration>) {
    let members = fleet.members.len();
    let m = &plan.mcs[k % plan.mcs.len()];
    let export = &plan.exports[k % plan.exports.len().max(1)];
    let mcs_address = address(4_000_000 + 2 * k);
    let export_address = address(4_000_000 + 2 * k + 1);
    let slice = format!("{}-a", m.name);
    let copy = copy_name(fleet, m.providers[0], &slice);
    let mcs_body = native_slice_of(&ObjectRef::new(ns, &m.name), &slice, &mcs_address);
    let export_slice = format!("{}-a", export.name);
    let at = ObjectRef::new(ns, &export.name);
    let export_body = native_slice_of(&at, &export_slice, &export_address);
    let mut consumers: HashSet<usize> = m.consumers.iter().copied().collect();
    let mut importers: HashSet<usize> = (0..members).filter(|m| plan.crds[*m]).collect();
    let slices = slices_path(ns);
    let (mcs_path, export_path) = (
        format!("{slices}/{slice}"),
        format!("{slices}/{export_slice}"),
    );
    let (provider, exporter) = (
        fleet.member_url(m.providers[0]),
        fleet.member_url(export.exporter),
    );
    let start = Instant::now();
    tokio::join!(
        put(&fleet.http, provider, &mcs_path, &mcs_body),
        put(&fleet.http, exporter, &export_path, &export_body),
    );
    let deadline = start + Duration::from_secs(10);
    let (mut to_consumers, mut to_importers) = (None, None);
    while !(consumers.is_empty() && importers.is_empty()) {
        let Some(event) = next_before(events, deadline).await else {
            break;
        };
        let shows = |want: &str| event.first_address.as_deref() == Some(want);
        if event.tag < members {
            if event.name == copy && shows(&mcs_address) && consumers.remove(&event.tag) {
                consumers
                    .is_empty()
                    .then(|| to_consumers = Some(event.at - start));
            }
        } else if shows(&export_address) && importers.remove(&(event.tag - members)) {
            importers
                .is_empty()
                .then(|| to_importers = Some(event.at - start));
        }
    }
    (to_consumers, to_importers)
}
