//! What a stdio server writes on its standard error: logged, and its newest lines kept for
//! administrators — on the server's page, and in the message of a start that failed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::ChildStderr;
use tokio::task::JoinHandle;

/// How many of the newest lines are kept.
const LINES: usize = 50;

/// How much of one line is kept (a program printing one endless line costs no more).
const LINE_BYTES: usize = 1000;

/// How many of the newest lines a failed start's message quotes.
const QUOTED: usize = 5;

/// The newest lines of one server's standard error, across its restarts.
#[derive(Clone, Default)]
pub(super) struct StderrTail(Arc<Mutex<Kept>>);

#[derive(Default)]
struct Kept {
    lines: VecDeque<String>,
    /// How many lines were ever kept: where a start's own lines begin.
    written: u64,
}

/// Shortest value hidden: shorter ones (`1`, `true`) would hide too much to be worth it.
const HIDDEN_FROM: usize = 8;

impl StderrTail {
    /// Reads `stderr` line by line until the program closes it, logging each line as
    /// `program`'s, with each of `secrets` (its environment's values) hidden.
    pub(super) fn follow(&self, stderr: ChildStderr, program: &str, secrets: Vec<String>) -> JoinHandle<()> {
        let (tail, program) = (self.clone(), program.to_string());
        let secrets: Vec<String> = secrets.into_iter().filter(|s| s.len() >= HIDDEN_FROM).collect();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr);
            let mut line = Vec::new();
            loop {
                line.clear();
                // Read in bounded pieces: a line without end comes in pieces, never held whole.
                match (&mut reader).take(LINE_BYTES as u64).read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let mut text = String::from_utf8_lossy(&line).trim_end().to_string();
                if text.is_empty() {
                    continue;
                }
                for secret in &secrets {
                    text = text.replace(secret.as_str(), "***");
                }
                tracing::info!(program = %program, "stdio server: {text}");
                let mut kept = tail.0.lock().expect("stderr tail");
                if kept.lines.len() == LINES {
                    kept.lines.pop_front();
                }
                kept.lines.push_back(text);
                kept.written += 1;
            }
        })
    }

    /// The kept lines, oldest first.
    pub(super) fn lines(&self) -> Vec<String> {
        self.0.lock().expect("stderr tail").lines.iter().cloned().collect()
    }

    /// Where the lines written from now on begin, for [`StderrTail::quote_since`].
    pub(super) fn mark(&self) -> u64 {
        self.0.lock().expect("stderr tail").written
    }

    /// The newest few lines written since `mark`, for a failure's message; `None` when the
    /// program said nothing since (an earlier run's words are not its).
    pub(super) fn quote_since(&self, mark: u64) -> Option<String> {
        let kept = self.0.lock().expect("stderr tail");
        let since = usize::try_from(kept.written - mark).unwrap_or(usize::MAX).min(kept.lines.len());
        let newest: Vec<&str> =
            kept.lines.iter().skip(kept.lines.len() - since.min(QUOTED)).map(String::as_str).collect();
        (!newest.is_empty()).then(|| newest.join(" ⏎ "))
    }
}
