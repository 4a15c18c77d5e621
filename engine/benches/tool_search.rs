//! Tool search over the corpus of public MCP servers (`bench/tool-search/`): how well the
//! queries find the tools that serve them (recall@1, recall@5, MRR), what a listing costs with
//! and without search (a tenant in `search` mode lists its search tool), and how long a search takes among 5,000 tools.
//!
//! recall@k of a query is the share of the tools that serve it found in the first k, out of at
//! most k (a query two tools serve is fully recalled at 1 when either comes first); MRR is the
//! mean of 1/rank of the first tool that serves it (0 when none is found); each also for the
//! queries of even and of odd position apart, so that a ranking tuned on one half is judged on
//! the other.

mod common;

use std::collections::HashMap;
use std::fmt;
use std::time::Instant;

use engine::catalog::search::{Searchable, ToolIndex};
use serde::Deserialize;
use serde_json::{Value, json};

use common::report;

#[derive(Deserialize)]
struct CorpusTool {
    server: String,
    name: String,
    description: String,
    #[serde(rename = "inputSchema")]
    input_schema: Value,
}

#[derive(Deserialize)]
struct Query {
    query: String,
    /// `server/name` of each tool that serves it.
    tools: Vec<String>,
}

/// How many tools a search answers, as the admin API does unless asked for another count.
const COUNT: usize = 5;

/// The tools of the large catalog the latency is measured in.
const LARGE: usize = 5_000;

fn read<T: serde::de::DeserializeOwned>(file: &str) -> T {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/tool-search").join(file);
    serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn searchable(tool: &CorpusTool) -> Searchable<'_> {
    Searchable {
        name: &tool.name,
        server: &tool.server,
        description: &tool.description,
        tags: &[],
        input_schema: tool.input_schema.clone(),
    }
}

/// Tokens, roughly: a quarter of the JSON's bytes (of the MCP definitions, as servers list them).
fn tokens(value: &Value) -> usize {
    value.to_string().len().div_ceil(4)
}

fn mcp_definition(tool: &CorpusTool) -> Value {
    json!({"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema})
}

/// How one query fared: its recall at 1 and at COUNT, the reciprocal rank of its first tool,
/// what came first instead when none of its tools is in the first COUNT, and the tokens of the
/// answer of COUNT tools.
struct Judged {
    recall_1: f64,
    recall_5: f64,
    reciprocal_rank: f64,
    missed: Option<String>,
    answer_tokens: usize,
}

fn judge(
    index: &ToolIndex,
    corpus: &[CorpusTool],
    position: &HashMap<String, usize>,
    query: &Query,
) -> Judged {
    let wanted: Vec<usize> = query
        .tools
        .iter()
        .map(|tool| *position.get(tool).unwrap_or_else(|| panic!("`{tool}` is not in the corpus")))
        .collect();
    let found: Vec<usize> = index.search(&query.query, corpus.len()).iter().map(|hit| hit.index).collect();
    let recall = |k: usize| {
        let within = found.iter().take(k).filter(|i| wanted.contains(i)).count();
        within as f64 / wanted.len().min(k) as f64
    };
    let recall_5 = recall(COUNT);
    let missed = (recall_5 == 0.0).then(|| {
        let top: Vec<&str> = found.iter().take(3).map(|&i| corpus[i].name.as_str()).collect();
        format!("  {:?} wants {:?}, got {:?}", query.query, query.tools, top)
    });
    let answer = found.iter().take(COUNT).map(|&i| mcp_definition(&corpus[i])).collect();
    Judged {
        recall_1: recall(1),
        recall_5,
        reciprocal_rank: found
            .iter()
            .position(|i| wanted.contains(i))
            .map_or(0.0, |rank| 1.0 / (rank + 1) as f64),
        missed,
        answer_tokens: tokens(&Value::Array(answer)),
    }
}

/// recall@1, recall@COUNT and MRR of some queries.
struct Scores {
    queries: usize,
    recall_1: f64,
    recall_5: f64,
    mrr: f64,
}

impl Scores {
    fn of<'a>(judged: impl Iterator<Item = &'a Judged>) -> Scores {
        let (mut queries, mut recall_1, mut recall_5, mut ranks) = (0, 0.0, 0.0, 0.0);
        for one in judged {
            queries += 1;
            recall_1 += one.recall_1;
            recall_5 += one.recall_5;
            ranks += one.reciprocal_rank;
        }
        let n = queries as f64;
        Scores { queries, recall_1: recall_1 / n, recall_5: recall_5 / n, mrr: ranks / n }
    }
}

impl fmt::Display for Scores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "recall@1 {:.3}, recall@{COUNT} {:.3}, MRR {:.3}", self.recall_1, self.recall_5, self.mrr)
    }
}

fn quality(corpus: &[CorpusTool], queries: &[Query]) {
    let index = ToolIndex::new(corpus.iter().map(searchable));
    let position: HashMap<String, usize> =
        corpus.iter().enumerate().map(|(i, tool)| (format!("{}/{}", tool.server, tool.name), i)).collect();
    let judged: Vec<Judged> = queries.iter().map(|query| judge(&index, corpus, &position, query)).collect();
    let all = Scores::of(judged.iter());
    println!("tool search, {} queries over {} tools: {all}", queries.len(), corpus.len());
    // A change of the ranking tuned on one half shows on the other whether it generalises.
    let even = Scores::of(judged.iter().step_by(2));
    let odd = Scores::of(judged.iter().skip(1).step_by(2));
    println!("  the {} of even position: {even}\n  the {} of odd position: {odd}", even.queries, odd.queries);
    let missed: Vec<&str> = judged.iter().filter_map(|one| one.missed.as_deref()).collect();
    println!("not in the first {COUNT} ({}):\n{}", missed.len(), missed.join("\n"));

    let full: usize = corpus.iter().map(|tool| tokens(&mcp_definition(tool))).sum();
    let answers: usize = judged.iter().map(|one| one.answer_tokens).sum();
    println!(
        "listing of the {} tools: ~{full} tokens; a search's answer ({COUNT} tools): ~{} tokens on average",
        corpus.len(),
        answers / queries.len()
    );
    let searching = tokens(&engine::schema::render::published_mcp(&engine::catalog::search_tool()));
    println!(
        "listing in search mode (the search tool, nothing pinned): ~{searching} tokens, {:.2} % of the full listing",
        100.0 * searching as f64 / full as f64
    );
}

fn latency(corpus: &[CorpusTool], queries: &[Query]) {
    let copies = LARGE.div_ceil(corpus.len());
    let large: Vec<CorpusTool> = (0..copies)
        .flat_map(|copy| {
            corpus.iter().map(move |tool| CorpusTool {
                server: format!("{}{copy}", tool.server),
                name: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: tool.input_schema.clone(),
            })
        })
        .take(LARGE)
        .collect();
    let started = Instant::now();
    let index = ToolIndex::new(large.iter().map(searchable));
    println!("index of {} tools built in {:.3?}", large.len(), started.elapsed());
    let mut samples = Vec::new();
    for _ in 0..5 {
        for query in queries {
            let started = Instant::now();
            std::hint::black_box(index.search(&query.query, COUNT));
            samples.push(started.elapsed());
        }
    }
    report(&format!("search among {} tools", large.len()), samples);
}

fn main() {
    if !common::benchmarking() {
        return;
    }
    let corpus: Vec<CorpusTool> = read("corpus.json");
    let queries: Vec<Query> = read("queries.json");
    quality(&corpus, &queries);
    latency(&corpus, &queries);
}
