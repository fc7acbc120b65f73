#!/usr/bin/env python3
"""What constrained sampling costs: the same SQL-generation prompts sent to llama-server with
and without the SQL grammar, and llama-server's own timings (prompt and generation tokens per
second) for each. Run by `scripts/bench.sh grammar`:

    bench/sampling.py URL MODEL GRAMMAR_FILE DESCRIPTION_FILE

No pg_ask in the loop: the prompt is the SQL-generation prompt's shape over the description,
the grammar what `bench_grammar --print` builds from it.
"""
import json
import statistics
import sys
import urllib.request

url, model, grammar_file, description_file = sys.argv[1:5]
grammar = open(grammar_file).read()
description = open(description_file).read()
questions = [
    "How many restaurants are there?",
    "What is the average rating of restaurants in San Francisco?",
    "Which cities have more than three restaurants?",
    "List the five best rated Italian restaurants.",
    "How many reviews gave 5 stars in 2023?",
    "Which restaurants opened after 2020?",
]
system = "Translate the question into ONE read-only PostgreSQL query over the tables in <schema>. Reply with the query in a ```sql fenced block and nothing else."


def ask(question, constrained):
    body = {
        "model": model,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": f"<schema>\n{description}</schema>\n\n<question>{question}</question>"},
        ],
        "temperature": 0,
        "max_tokens": 256,
        "stop": ["\n```\n\n"],
        "cache_prompt": False,
    }
    if constrained:
        body["grammar"] = grammar
    req = urllib.request.Request(f"{url}/chat/completions", data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)["timings"]


for constrained in (False, True):
    gen, prompt, tokens = [], [], []
    for q in questions:
        t = ask(q, constrained)
        gen.append(t["predicted_per_second"])
        prompt.append(t["prompt_per_second"])
        tokens.append(t["predicted_n"])
    label = "with the grammar   " if constrained else "without the grammar"
    print(
        f"{label}: generation {statistics.mean(gen):6.1f} tokens/s, prompt {statistics.mean(prompt):6.1f} tokens/s, "
        f"{statistics.mean(tokens):5.1f} tokens per reply (mean of {len(questions)}; grammar {len(grammar) // 1024} KB)"
    )
