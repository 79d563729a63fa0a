use super::*;

fn resource(name: &str, share: Option<f64>) -> Resource {
    by_share(name, share, format!("{name} summary"), BTreeMap::new())
}

#[test]
fn most_of_the_time_names_the_resource() {
    let b = verdict(vec![
        resource("server_cpu", Some(0.2)),
        resource("locks", Some(0.6)),
        resource("network", Some(0.15)),
    ]);
    assert_eq!(b.verdict, "locks");
    assert_eq!(b.named().map(|r| r.status), Some(Status::Bottleneck));
    assert!(b.line.starts_with("locks: "), "{}", b.line);
}

#[test]
fn a_clear_lead_names_it_and_an_even_split_names_none() {
    let lead = verdict(vec![
        resource("io", Some(0.35)),
        resource("network", Some(0.15)),
    ]);
    assert_eq!(lead.verdict, "io");
    let even = verdict(vec![
        resource("server_cpu", Some(0.35)),
        resource("network", Some(0.3)),
        resource("locks", Some(0.2)),
    ]);
    assert_eq!(even.verdict, "none");
    assert!(
        even.line.starts_with("no single bottleneck"),
        "{}",
        even.line
    );
}

#[test]
fn a_saturated_rig_wins_and_nothing_seen_is_unknown() {
    let mut rig = resource("rig", None);
    rig.status = Status::Bottleneck;
    let b = verdict(vec![rig, resource("locks", Some(0.9))]);
    assert_eq!(b.verdict, "rig");
    let b = verdict(vec![resource("locks", None)]);
    assert_eq!(b.verdict, "unknown");
}
