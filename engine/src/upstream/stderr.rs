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
pub(super) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    /// Reads `stderr` line by line until the program closes it, logging each line as
    /// `program`'s.
    pub(super) fn follow(&self, stderr: ChildStderr, program: &str) -> JoinHandle<()> {
        let (tail, program) = (self.clone(), program.to_string());
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
                let text = String::from_utf8_lossy(&line).trim_end().to_string();
                if text.is_empty() {
                    continue;
                }
                tracing::info!(program = %program, "stdio server: {text}");
                let mut lines = tail.0.lock().expect("stderr tail");
                if lines.len() == LINES {
                    lines.pop_front();
                }
                lines.push_back(text);
            }
        })
    }

    /// The kept lines, oldest first.
    pub(super) fn lines(&self) -> Vec<String> {
        self.0.lock().expect("stderr tail").iter().cloned().collect()
    }

    /// The newest few lines, for a failure's message; `None` when the program said nothing.
    pub(super) fn quote(&self) -> Option<String> {
        let lines = self.0.lock().expect("stderr tail");
        let newest: Vec<&str> =
            lines.iter().skip(lines.len().saturating_sub(QUOTED)).map(String::as_str).collect();
        (!newest.is_empty()).then(|| newest.join(" ⏎ "))
    }
}
