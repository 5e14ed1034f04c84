//! The brand (product name, tab-group title and colour) from the repository's brand.json,
//! compiled in so a white-label build changes one file.

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Brand {
    pub product_name: String,
    pub group_title: String,
    pub group_color: String,
    pub badge_color: String,
}

const BRAND_JSON: &str = include_str!("../../../brand.json");

pub fn brand() -> Brand {
    crate::js::parse_json(BRAND_JSON).unwrap_or_else(|_| Brand {
        product_name: "Browser Operator".into(),
        group_title: "Browser Operator".into(),
        group_color: "blue".into(),
        badge_color: "#1a73e8".into(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn brand_json_parses() {
        let b: super::Brand = serde_json::from_str(super::BRAND_JSON).expect("brand.json is valid");
        assert!(!b.group_title.is_empty());
        assert!(
            ["grey", "blue", "red", "yellow", "green", "pink", "purple", "cyan", "orange"]
                .contains(&b.group_color.as_str())
        );
    }
}
