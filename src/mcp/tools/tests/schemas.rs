//! The definitions `tools/list` shows: one per catalog tool, each with an
//! inline object schema generated from its argument type.

use serde_json::json;

use crate::mcp::catalog;
use crate::mcp::tools::definitions;

#[test]
fn every_catalog_tool_has_a_definition_with_an_inline_object_schema() {
    let defined: Vec<&str> = definitions().iter().map(|d| d.spec.name).collect();
    let catalogued: Vec<&str> = catalog::TOOLS.iter().map(|t| t.name).collect();
    assert_eq!(defined, catalogued);
    for definition in definitions() {
        let schema = serde_json::Value::Object(definition.input_schema.clone());
        let name = definition.spec.name;
        assert_eq!(schema["type"], "object", "{name}: {schema}");
        assert!(schema["properties"].is_object(), "{name}: {schema}");
        assert_eq!(schema["additionalProperties"], false, "{name}: {schema}");
        let text = schema.to_string();
        assert!(
            !text.contains("$ref") && !text.contains("$defs"),
            "{name}: {text}"
        );
        assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
        assert!(!definition.title.is_empty() && definition.description.len() > 40);
    }
}

#[test]
fn the_write_schema_requires_what_a_day_needs_and_bounds_it() {
    let record = definitions()
        .iter()
        .find(|d| d.spec.name == "record_daily_entry")
        .unwrap();
    let schema = serde_json::Value::Object(record.input_schema.clone());
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort();
    assert_eq!(required, ["date", "eggs_collected", "flock"]);
    let properties = &schema["properties"];
    assert_eq!(properties["eggs_collected"]["minimum"], 0);
    assert_eq!(properties["date"]["format"], "date");
    assert_eq!(properties["notes"]["maxLength"], 1000);
    assert!(
        properties["expected_version"]["description"]
            .as_str()
            .unwrap()
            .contains("version")
    );

    let flocks = definitions()
        .iter()
        .find(|d| d.spec.name == "list_flocks")
        .unwrap();
    let status = &flocks.input_schema["properties"]["status"];
    assert!(status.to_string().contains(r#""active""#), "{status}");
    assert_eq!(
        flocks.input_schema["properties"]["limit"]["maximum"],
        json!(200)
    );
}
