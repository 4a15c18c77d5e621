//! Tool search: BM25 (the `bm25` crate) over a tool's name, server, tags, description, and its
//! parameters' names and descriptions, so that the tools needed are found among thousands
//! without listing them all.
//!
//! Words are also split at `_`, `-`, `.`, `/`, `:` and camelCase, the joined form kept too
//! ("GitHub" is `GitHub Git Hub`), then every text goes through the crate's English tokenizer
//! (Unicode normalisation, stop words, stemming), the query as the documents. A tool's name
//! counts more than its description: in a small catalog "the folders inside a directory" finds
//! `list_directory` before `view_text_file`, which "shows" a file; the benchmark of
//! `bench/tool-search` scores the same either way.
//!
//! A query also gains words for the values it holds ([`HINTS`]): a request names what a tool is
//! to take ("summarise https://…", "what's in /tmp/a.txt", "land PR 61"), where tools say what
//! kind of value they take ("a URL", "the file's path", "pull request number").

use std::fmt;
use std::sync::LazyLock;

use bm25::{DefaultTokenizer, Embedder, EmbedderBuilder, Language, Scorer, Tokenizer};
use regex::RegexSet;
use serde_json::Value;

/// How many times a tool's name counts against once for its description.
const NAME_WEIGHT: usize = 3;

/// How deep into a schema's nested objects parameters are read.
const SCHEMA_DEPTH: usize = 2;

/// What a query's values look like, and the words tools use for such a value: each pattern that
/// matches adds its words to the query once.
const HINTS: [(&str, &str); 7] = [
    (r"https?://\S", "url"),
    (r"(?:^|\s)(?:~?/[\w.-]|[\w-]+/[\w/-]*\.\w|\*\.\w)", "file path"),
    (r"-?\d+\.\d+\s*,\s*-?\d+\.\d+", "latitude longitude coordinates"),
    (r"(?:^|\s)#[[:alpha:]]", "channel"),
    (r"\bPRs?\b", "pull request"),
    (r"\bMRs?\b", "merge request"),
    (r"\brepos?\b", "repository"),
];

static HINT_PATTERNS: LazyLock<RegexSet> =
    LazyLock::new(|| RegexSet::new(HINTS.map(|(pattern, _)| pattern)).expect("the hints' patterns compile"));

/// What a search reads of one tool.
#[derive(Debug, Clone)]
pub struct Searchable<'a> {
    pub name: &'a str,
    pub server: &'a str,
    pub description: &'a str,
    pub tags: &'a [String],
    /// The schema its callers see (presets already removed, so hidden parameters are never
    /// searched).
    pub input_schema: Value,
}

/// One tool found, by its position in the tools the index was built from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub index: usize,
    pub score: f32,
}

/// The BM25 index of a list of tools.
pub struct ToolIndex {
    embedder: Embedder<u32, Words>,
    scorer: Scorer<usize>,
    len: usize,
}

impl fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolIndex").field("tools", &self.len).finish_non_exhaustive()
    }
}

impl ToolIndex {
    pub fn new<'a>(tools: impl IntoIterator<Item = Searchable<'a>>) -> ToolIndex {
        let documents: Vec<String> = tools.into_iter().map(document).collect();
        let contents: Vec<&str> = documents.iter().map(String::as_str).collect();
        let words = Words(DefaultTokenizer::new(Language::English));
        let embedder = EmbedderBuilder::with_tokenizer_and_fit_to_corpus(words, &contents).build();
        let mut scorer = Scorer::new();
        for (index, document) in documents.iter().enumerate() {
            scorer.upsert(&index, embedder.embed(document));
        }
        ToolIndex { embedder, scorer, len: documents.len() }
    }

    /// The `count` tools that match `query` best, best first; none when no word of it is in
    /// any tool.
    pub fn search(&self, query: &str, count: usize) -> Vec<Hit> {
        let mut hits: Vec<Hit> = self
            .scorer
            .matches(&self.embedder.embed(&with_hints(query)))
            .into_iter()
            .map(|found| Hit { index: found.id, score: found.score })
            .collect();
        // Equal scores in the order of the tools, so that an answer does not vary by run.
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        hits.truncate(count);
        hits
    }
}

/// `query` with the words of the [`HINTS`] its values match.
fn with_hints(query: &str) -> String {
    let mut text = query.to_string();
    for matched in HINT_PATTERNS.matches(query).iter() {
        text.push(' ');
        text.push_str(HINTS[matched].1);
    }
    text
}

/// The text a tool is indexed by: its name [`NAME_WEIGHT`] times, its server and its tags, its
/// description, and its parameters' names and descriptions.
fn document(tool: Searchable<'_>) -> String {
    let mut text = String::with_capacity(NAME_WEIGHT * (tool.name.len() + 1) + tool.description.len() + 256);
    for _ in 0..NAME_WEIGHT {
        text.push_str(tool.name);
        text.push('\n');
    }
    text.push_str(tool.server);
    for tag in tool.tags {
        text.push(' ');
        text.push_str(tag);
    }
    text.push('\n');
    text.push_str(tool.description);
    parameters(&tool.input_schema, SCHEMA_DEPTH, &mut text);
    text
}

/// Appends the names and descriptions of a schema's properties, and of the objects they hold,
/// `depth` levels down.
fn parameters(schema: &Value, depth: usize, text: &mut String) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
    for (name, property) in properties {
        text.push('\n');
        text.push_str(name);
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            text.push_str(": ");
            text.push_str(description);
        }
        if depth > 1 {
            parameters(property, depth - 1, text);
            if let Some(items) = property.get("items") {
                parameters(items, depth - 1, text);
            }
        }
    }
}

/// Text with its identifiers also as words: `list_pullRequests` → `list pullRequests pull
/// Requests`.
fn split_identifier(text: &str) -> String {
    let mut words = String::with_capacity(2 * text.len());
    for word in text.split(|c: char| c.is_whitespace() || matches!(c, '_' | '-' | '.' | '/' | ':')) {
        if word.is_empty() {
            continue;
        }
        words.push_str(word);
        words.push(' ');
        let camel = word.chars().zip(word.chars().skip(1)).any(|(a, b)| a.is_lowercase() && b.is_uppercase());
        if camel {
            let mut previous = ' ';
            for c in word.chars() {
                if previous.is_lowercase() && c.is_uppercase() {
                    words.push(' ');
                }
                words.push(c);
                previous = c;
            }
            words.push(' ');
        }
    }
    words
}

/// The crate's English tokenizer, after identifiers are split into words.
struct Words(DefaultTokenizer);

impl Tokenizer for Words {
    fn tokenize(&self, text: &str) -> Vec<String> {
        self.0.tokenize(&split_identifier(text))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool<'a>(name: &'a str, description: &'a str, input_schema: Value) -> Searchable<'a> {
        Searchable { name, server: "demo", description, tags: &[], input_schema }
    }

    #[test]
    fn identifiers_are_split_into_words() {
        assert_eq!(split_identifier("list_pullRequests"), "list pullRequests pull Requests ");
        assert_eq!(split_identifier("brave-web.search/v2 a:b"), "brave web search v2 a b ");
        assert_eq!(split_identifier("HTTPServer GitHub"), "HTTPServer GitHub Git Hub ");
    }

    #[test]
    fn finds_by_name_words_description_and_parameters_stemmed() {
        let none = json!({"type": "object"});
        let issue = json!({"type": "object", "properties": {"assignee": {"type": "string"}}});
        let weather =
            json!({"type": "object", "properties": {"city": {"description": "Where forecasts are wanted"}}});
        let tools = [
            tool("create_issue", "Open a new ticket in a repository", issue),
            tool("getWeather", "Current conditions", weather),
            tool("read_file", "Return a file's contents", none),
        ];
        let index = ToolIndex::new(tools);
        let first = |query: &str| index.search(query, 3).first().map(|hit| hit.index);
        assert_eq!(first("creating issues"), Some(0), "name words, stemmed");
        assert_eq!(first("who is the assignee"), Some(0), "a parameter's name");
        assert_eq!(first("weather forecast"), Some(1), "camelCase and a parameter's description");
        assert_eq!(first("getweather"), Some(1), "a camelCase word joined");
        assert_eq!(first("contents of a file"), Some(2));
        assert!(index.search("zebra", 3).is_empty(), "no word in any tool");
        assert_eq!(index.search("file issue weather", 2).len(), 2, "at most `count`");
    }

    #[test]
    fn values_in_a_query_find_the_tools_that_take_them() {
        let none = json!({"type": "object"});
        let url = json!({"type": "object", "properties": {"url": {"description": "The page's URL"}}});
        let path = json!({"type": "object", "properties": {"path": {"description": "A file path"}}});
        let tools = [
            tool("fetch", "Fetches a page from the internet", url),
            tool("read_text_file", "Reads a file's text", path),
            tool("merge_pull_request", "Merges a pull request", none.clone()),
            tool("maps_elevation", "Height above sea level for latitude and longitude", none.clone()),
            tool("post_message", "Posts to a Slack channel", none),
        ];
        let index = ToolIndex::new(tools);
        let first = |query: &str| index.search(query, 5).first().map(|hit| hit.index);
        assert_eq!(first("summarise https://example.com/a"), Some(0));
        assert_eq!(first("what does ~/notes say"), Some(1));
        assert_eq!(first("land PR 61"), Some(2));
        assert_eq!(first("how high is 39.74, -104.99"), Some(3));
        assert_eq!(first("tell #deploys we shipped"), Some(4));
        assert!(index.search("tell deploys we shipped", 5).is_empty(), "a word, not a channel");
    }
}
