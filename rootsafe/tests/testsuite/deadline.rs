//! Polling a non-blocking attempt until it succeeds, fails or the deadline passes.

use std::time::{Duration, Instant};

use rootsafe::deadline::{Backoff, poll};

#[test]
fn the_first_value_ends_the_wait() {
    let mut attempts = 0;
    let got: Result<_, ()> = poll(
        Instant::now() + Duration::from_secs(60),
        Backoff::default(),
        || {
            attempts += 1;
            Ok((attempts == 3).then_some("taken"))
        },
    );
    assert_eq!(got, Ok(Some("taken")));
    assert_eq!(attempts, 3);
}

#[test]
fn an_error_ends_the_wait_at_once() {
    let mut attempts = 0;
    let got: Result<Option<()>, &str> = poll(
        Instant::now() + Duration::from_secs(60),
        Backoff::default(),
        || {
            attempts += 1;
            Err("broken")
        },
    );
    assert_eq!((got, attempts), (Err("broken"), 1));
}

#[test]
fn the_wait_gives_up_at_the_deadline_not_before() {
    let started = Instant::now();
    let deadline = started + Duration::from_millis(100);
    let mut attempts = 0;
    let got: Result<Option<()>, ()> = poll(deadline, Backoff::default(), || {
        attempts += 1;
        Ok(None)
    });
    assert_eq!(got, Ok(None));
    assert!(Instant::now() >= deadline);
    // Pauses double from 1 ms: several attempts fit in 100 ms.
    assert!(attempts > 2, "{attempts} attempts");
}

#[test]
fn a_passed_deadline_still_gets_one_attempt() {
    let mut attempts = 0;
    let got: Result<Option<()>, ()> = poll(Instant::now(), Backoff::default(), || {
        attempts += 1;
        Ok(None)
    });
    assert_eq!((got, attempts), (Ok(None), 1));
}
