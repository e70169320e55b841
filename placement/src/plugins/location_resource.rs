//! LocationResource: a kcp Location is a candidate for a Placement only when its
//! `spec.resource` is the Placement's `locationResource` (a Location of SyncTargets does
//! not serve a Placement that asks for something else). A policy without a
//! locationResource lets every candidate pass, so other dialects can share profiles.

use super::{Context, Filter, Subject, Verdict};

pub(super) struct LocationResource<'a> {
    wanted: Option<&'a str>,
}

pub(super) fn prepare<'a>(context: &Context<'a>) -> LocationResource<'a> {
    LocationResource { wanted: context.policy.location_resource.as_deref() }
}

impl Filter for LocationResource<'_> {
    fn check(&self, subject: Subject<'_>) -> Verdict {
        let Some(wanted) = self.wanted else {
            return Verdict::Pass;
        };
        match subject.candidate.location_resource.as_deref() {
            Some(served) if served == wanted => Verdict::Pass,
            Some(served) => Verdict::reject(format!("is a location for {served}, the placement asks for {wanted}")),
            None => Verdict::reject(format!("names no resource, the placement asks for {wanted}")),
        }
    }
}
